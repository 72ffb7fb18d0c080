"""auth_strategy = keystone: keystonemiddleware guards every route but the root."""

import pytest

from tests import harness


@pytest.fixture
def keystone_environment():
    env = harness.Environment('sqlite', **{
        'api.auth_strategy': 'keystone',
        'keystone_authtoken.www_authenticate_uri': 'http://keystone.test/v3',
    })
    yield env
    env.close()


def test_version_document_needs_no_token(keystone_environment):
    status, _headers, body = keystone_environment.request(
        'GET', '/', token=None)
    assert status == 200
    assert body['versions'][0]['max_version'] == '1.44'


def test_other_routes_need_a_keystone_token(keystone_environment):
    status, headers, _body = keystone_environment.request(
        'GET', '/resource_providers', token=None)
    assert status == 401
    assert headers['www-authenticate'] == 'Keystone uri="http://keystone.test/v3"'


def test_noauth2_tokens_mean_nothing_to_keystone(keystone_environment):
    """Without identity headers from a validated token, nothing is let in."""
    status, _headers, _body = keystone_environment.request(
        'GET', '/resource_providers', token=None,
        headers={'X-Identity-Status': 'Confirmed', 'X-User-Id': 'admin',
                 'X-Roles': 'admin'})
    assert status == 401
