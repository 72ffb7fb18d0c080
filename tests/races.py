"""Helpers for tests that send many writes at once through one environment."""

import concurrent.futures


def race(environment, requests, version):
    """Send (method, path, body) requests at once; their (status, payload)s."""
    def send(request):
        method, path, body = request
        status, _headers, payload = environment.request(
            method, path, body, version=version)
        return status, payload

    with concurrent.futures.ThreadPoolExecutor(len(requests)) as pool:
        return list(pool.map(send, requests))


def assert_one_winner(results, winning_status=200):
    """Exactly one request won; every other saw a concurrent-update 409."""
    statuses = sorted(status for status, _payload in results)
    assert statuses == sorted([winning_status] + [409] * (len(results) - 1)), (
        results)
    for status, payload in results:
        if status == 409:
            assert payload['errors'][0]['code'] == (
                'placement.concurrent_update')


def winning_body(results, bodies, winning_status=200):
    """The body of the request that won the race."""
    return next(body for (status, _payload), body in zip(results, bodies)
                if status == winning_status)


def create_provider(environment, uuid, name='racer'):
    status, _headers, _body = environment.request(
        'POST', '/resource_providers', {'name': name, 'uuid': uuid},
        version='1.20')
    assert status == 200
