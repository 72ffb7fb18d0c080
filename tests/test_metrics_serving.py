"""/metrics under the production line: uwsgi with 4 workers, every scrape
adding up what all of them counted (prometheus_client's multiprocess
mode), no counter going backwards when a worker dies and is respawned,
the counts of a previous server emptied when a new master starts, and
every family of such a scrape named as Prometheus' rules say."""

import concurrent.futures
import os
import signal
import uuid

import pytest

from tests import harness
from tests import metrics_scrape
from tests import promlint
from tests import servers

pytestmark = pytest.mark.slow

ROOTS = 40
#: Every request of the test asks for it: the readiness checks of
#: servers.Uwsgi ask for another.
VERSION = '1.30'


def _scrape(server):
    status, text = servers.request(server.port, 'GET', '/metrics')
    assert status == 200
    return metrics_scrape.samples(text)


def _requests(scraped, route, method, status):
    return metrics_scrape.value(
        scraped, 'placement_requests_total', route=route, method=method,
        status=status, microversion=VERSION)


def _children(server):
    """The pids of the uwsgi master's processes: workers and router."""
    pid = server.process.pid
    with open('/proc/%d/task/%d/children' % (pid, pid)) as children:
        return set(children.read().split())


def _known_sequence(port):
    """The requests whose counts the test checks."""
    def request(method, path, body=None):
        return servers.request(port, method, path, body, version=VERSION)

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(lambda _i: request('GET', '/'),
                                range(ROOTS)))
    assert {status for status, _body in answers} == {200}
    provider = str(uuid.uuid4())
    assert request('POST', '/resource_providers',
                   {'name': 'host', 'uuid': provider})[0] == 200
    assert request(
        'PUT', '/resource_providers/%s/inventories' % provider,
        {'resource_provider_generation': 0,
         'inventories': {'VCPU': {'total': 8, 'reserved': 2}}})[0] == 200
    for _i in range(3):
        assert request(
            'GET', '/allocation_candidates?resources=VCPU:1')[0] == 200
    for _i in range(2):
        assert request(
            'GET', '/allocation_candidates?resources=VCPU:100')[0] == 200

    def claim(amount, consumer_generation=None):
        return request(
            'PUT', '/allocations/%s' % uuid.uuid4(),
            {'allocations': {provider: {'resources': {'VCPU': amount}}},
             'project_id': 'p', 'user_id': 'u',
             'consumer_generation': consumer_generation})[0]

    assert claim(4) == 204
    assert claim(4) == 409                           # over capacity
    assert claim(1, consumer_generation=3) == 409    # generation conflict
    assert request('GET', '/no_such_route')[0] == 404


@pytest.mark.parametrize('lazy', [False, True],
                         ids=['built-in-master', 'lazy-apps'])
def test_every_worker_counted_and_none_going_backwards(backend, tmp_path,
                                                       lazy):
    db = harness.fresh_database(backend)
    db_url = db.engine.url.render_as_string(hide_password=False)
    db.dispose()
    extra_conf = ('[metrics]\nenabled = true\nmultiprocess_dir = %s\n'
                  % (tmp_path / 'metrics'))
    server = servers.Uwsgi(db_url, processes=4, lazy=lazy,
                           extra_conf=extra_conf)
    try:
        _known_sequence(server.port)
        scraped = _scrape(server)
        answering = server.answering_pids()
        assert len(answering) > 1, 'one worker answered everything'

        assert _requests(scraped, '/', 'GET', '200') == ROOTS
        assert _requests(scraped, '/resource_providers', 'POST', '200') == 1
        assert _requests(scraped, '/resource_providers/{uuid}/inventories',
                         'PUT', '200') == 1
        assert _requests(scraped, '/allocation_candidates', 'GET',
                         '200') == 5
        assert _requests(scraped, '/allocations/{consumer_uuid}', 'PUT',
                         '204') == 1
        assert _requests(scraped, '/allocations/{consumer_uuid}', 'PUT',
                         '409') == 2
        assert _requests(scraped, 'unmatched', 'GET', '404') == 1
        assert metrics_scrape.value(
            scraped, 'placement_request_duration_seconds_count', route='/',
            method='GET', microversion=VERSION) == ROOTS
        assert metrics_scrape.value(
            scraped, 'placement_candidates_returned_count') == 5
        assert metrics_scrape.value(
            scraped, 'placement_candidates_returned_sum') == 3
        assert metrics_scrape.value(
            scraped, 'placement_candidates_trees_searched_sum') == 3
        assert metrics_scrape.value(
            scraped, 'placement_candidates_empty_total') == 2
        for outcome, count in (('claimed', 1), ('capacity', 1),
                               ('generation_conflict', 1)):
            assert metrics_scrape.value(
                scraped, 'placement_claims_total', outcome=outcome) == count
        readiness_checks = metrics_scrape.value(
            scraped, 'placement_requests_total', route='/', method='GET',
            status='200', microversion=servers.VERSION)
        assert metrics_scrape.value(
            scraped, 'placement_db_statements_per_request_count',
            route='/') == ROOTS + readiness_checks
        assert metrics_scrape.value(
            scraped, 'placement_db_statements_per_request_count',
            route='/allocations/{consumer_uuid}') == 3
        assert metrics_scrape.value(
            scraped, 'placement_db_statements_per_request_sum',
            route='/') == 0
        for name, value in (('total_amount', 8), ('reserved', 2),
                            ('capacity', 6), ('used', 4)):
            assert metrics_scrape.value(
                scraped, 'placement_inventory_' + name,
                resource_class='VCPU') == value

        # A worker killed (a crash, or uwsgi recycling it) and respawned:
        # what it counted is still counted.
        children = _children(server)
        directory = tmp_path / 'metrics'
        # A worker that used a database connection: it has a live gauge.
        [killed, *_others] = sorted(
            pid for pid in answering
            if (directory / ('gauge_livesum_%s.db' % pid)).exists())
        os.kill(int(killed), signal.SIGKILL)
        assert harness.wait_for(lambda: killed not in _children(server) and (
            len(_children(server)) == len(children)))
        # With lazy-apps the new worker builds the application again.
        assert harness.wait_for(lambda: server.log_text().count(
            "WSGI app 0 (mountpoint='') ready") == (5 if lazy else 1))
        after = _scrape(server)
        for key, value in scraped.items():
            if key[0].endswith(('_total', '_count', '_sum', '_bucket')):
                assert after.get(key, 0) >= value, key
        assert _requests(after, '/', 'GET', '200') == ROOTS
        assert not (directory / ('gauge_livesum_%s.db' % killed)).exists()
        # No connection is in use between requests, in any worker alive.
        assert {value for (name, _labels), value in after.items()
                if name == 'placement_db_connections_checked_out'} <= {0}

        assert 'Traceback' not in server.log_text()
    finally:
        server.cleanup()

    # A new master, on the same directory, starts from nothing.
    server = servers.Uwsgi(db_url, processes=4, lazy=lazy,
                           extra_conf=extra_conf)
    try:
        assert _requests(_scrape(server), '/', 'GET', '200') == 0
    finally:
        server.cleanup()


@pytest.fixture(scope='module')
def every_family_scraped(tmp_path_factory):
    """A scrape of uwsgi's 4 workers (on SQLite) after requests giving
    every family a sample, explain's emptied step among them: promtool
    leaves out a family without one."""
    db = harness.fresh_database('sqlite')
    db_url = db.engine.url.render_as_string(hide_password=False)
    db.dispose()
    server = servers.Uwsgi(
        db_url, processes=4, extra_conf='[metrics]\nenabled = true\n'
        'multiprocess_dir = %s\n' % tmp_path_factory.mktemp('metrics'))
    try:
        _known_sequence(server.port)
        assert servers.request(
            server.port, 'GET', '/allocation_candidates?resources=VCPU:100'
            '&explain=true', version='1.41')[0] == 200
        status, text = servers.request(server.port, 'GET', '/metrics')
    finally:
        server.cleanup()
    assert status == 200
    return text


@pytest.mark.parametrize('linter', promlint.LINTERS)
def test_every_family_of_every_worker_follows_prometheus_rules(
        every_family_scraped, linter):
    assert linter(every_family_scraped) == []
    assert metrics_scrape.families_counted(
        every_family_scraped) == metrics_scrape.FAMILIES
