"""``[oslo_middleware] enable_proxy_headers_parsing``: behind a TLS proxy,
the URLs the service gives (``Location``) are the proxy's."""

from tests import harness

FORWARDED = {'x-forwarded-proto': 'https',
             'x-forwarded-host': 'placement.example.org'}
UUID = '8d8c4b5e-8a7e-4a4f-9d0c-3f1a2b3c4d5e'


def _location(backend, **conf):
    environment = harness.Environment(backend, **conf)
    try:
        status, headers, _body = environment.request(
            'POST', '/resource_providers', {'name': 'rp', 'uuid': UUID},
            version='1.20', headers=FORWARDED)
    finally:
        environment.close()
    assert status == 200
    return headers['location']


def test_forwarded_headers_are_ignored_by_default(backend):
    assert _location(backend) == 'http://localhost/resource_providers/' + UUID


def test_forwarded_headers_are_obeyed_when_enabled(backend):
    assert _location(
        backend, **{'oslo_middleware.enable_proxy_headers_parsing': True}
    ) == 'https://placement.example.org/resource_providers/' + UUID
