"""Headers and query strings as the reference gives them, where gabbi
cannot say it (a header that must be absent, HEAD, raw query bytes).

The reference adds ``Vary: openstack-api-version`` only to answers its
handlers return; errors raised past them (unknown route, body without a
content type, policy refusal, a provider or resource class named in the
path that does not exist) carry ``OpenStack-API-Version`` but no Vary.
Found by tests/differential.
"""

import pytest

UNKNOWN = '4f6f1e1e-0000-4000-8000-000000000001'


@pytest.mark.parametrize('method, path, token, status', [
    ('GET', '/resource_providers/' + UNKNOWN, 'admin', 404),
    ('GET', '/resource_classes/CUSTOM_NONE', 'admin', 404),
    ('DELETE', '/resource_classes/CUSTOM_NONE', 'admin', 404),
    ('GET', '/traits', 'someone:p', 403),
    ('GET', '/nowhere', 'admin', 404),
    ('GET', '/resource_providers/', 'admin', 404),
    ('GET', '//', 'admin', 404),
])
def test_errors_raised_past_handlers_have_no_vary(environment, method, path,
                                                   token, status):
    got, headers, _body = environment.request(method, path, version='1.39',
                                              token=token)
    assert got == status
    assert headers['openstack-api-version'] == 'placement 1.39'
    assert 'vary' not in headers


def test_body_without_content_type_has_no_vary(environment):
    got, headers, _body = environment.request(
        'POST', '/resource_providers', version='1.39',
        headers={'content-length': '2'})
    assert got == 400
    assert 'vary' not in headers


@pytest.mark.parametrize('method, path, body, status', [
    ('PATCH', '/resource_providers', None, 405),
    ('POST', '/resource_providers', {'nom': 'x'}, 400),
    ('GET', '/traits/CUSTOM_NONE', None, 404),
    ('GET', '/resource_providers/%s/inventories' % UNKNOWN, None, 404),
    ('DELETE', '/resource_providers/' + UNKNOWN, None, 404),
    ('GET', '/resource_providers?name=%ff', None, 400),
])
def test_errors_answered_by_handlers_have_vary(environment, method, path,
                                               body, status):
    got, headers, _body = environment.request(method, path, body,
                                              version='1.39')
    assert got == status
    assert headers['vary'] == 'openstack-api-version'


def test_head_error_is_an_empty_html_answer(environment):
    got, headers, body = environment.request('HEAD', '/resource_providers',
                                             version='1.39')
    assert got == 405
    assert headers['content-type'] == 'text/html; charset=UTF-8'
    assert body is None


@pytest.mark.parametrize('query', ['name=%ff', 'name=ok&member_of=%ff'])
def test_query_string_not_utf8_is_400(environment, query):
    got, _headers, body = environment.request(
        'GET', '/resource_providers?' + query, version='1.39')
    assert got == 400
    assert body['errors'][0]['detail'].endswith(
        "Invalid query string parameters: 'utf-8' codec can't decode byte "
        "0xff in position 0: invalid start byte  ")


def test_usages_query_string_not_utf8_is_400(environment):
    """The reference answers 500 (api-ref/divergences.md)."""
    got, _headers, body = environment.request(
        'GET', '/usages?project_id=%ff', version='1.39')
    assert got == 400
    assert "can't decode byte 0xff" in body['errors'][0]['detail']


def test_semicolon_separates_parameters(environment):
    got, _headers, body = environment.request(
        'GET', '/resource_providers?name=a;b=c', version='1.39')
    assert got == 400
    assert "('b' was unexpected)" in body['errors'][0]['detail']


def test_plus_is_a_space(environment):
    environment.request('POST', '/resource_providers', {'name': 'a b'},
                        version='1.39')
    got, _headers, body = environment.request(
        'GET', '/resource_providers?name=a+b', version='1.39')
    assert got == 200
    assert [rp['name'] for rp in body['resource_providers']] == ['a b']
