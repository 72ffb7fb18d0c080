"""An exception no handler expected is answered in Placement's format.

503 when the database cannot serve the request for now (the request
changed nothing and may be retried), 500 with the exception's text
otherwise, as the reference answers; both carry the request id.
"""

import pytest
import sqlalchemy as sa

from placement_lite.domain import providers

UNAVAILABLE = (
    'The server is currently unavailable. Please try again at a later '
    'time.\n\n The placement database is unavailable.  ')


def _failing(exc):
    def fail(*_args, **_kwargs):
        raise exc
    return fail


@pytest.mark.parametrize('exc', [
    sa.exc.OperationalError('SELECT 1', {}, Exception('server closed')),
    sa.exc.InterfaceError('SELECT 1', {}, Exception('connection gone')),
    sa.exc.TimeoutError('QueuePool limit reached'),
], ids=['operational', 'interface', 'pool-timeout'])
def test_an_unavailable_database_is_a_503(environment, monkeypatch, exc):
    monkeypatch.setattr(providers, 'list_providers', _failing(exc))
    status, headers, body = environment.request('GET', '/resource_providers',
                                                version='1.23')
    [error] = body['errors']
    assert (status, headers['content-type']) == (503, 'application/json')
    assert error['request_id'].startswith('req-')
    assert {key: error[key] for key in ('status', 'title', 'detail', 'code')
            } == {'status': 503, 'title': 'Service Unavailable',
                  'detail': UNAVAILABLE, 'code': 'placement.undefined_code'}


def test_any_other_exception_is_a_500_with_its_text(environment,
                                                      monkeypatch, caplog):
    monkeypatch.setattr(providers, 'list_providers',
                        _failing(RuntimeError('boom')))
    status, _headers, body = environment.request('GET', '/resource_providers',
                                                 version='1.23')
    [error] = body['errors']
    [logged] = [record for record in caplog.records
                if record.levelname == 'ERROR']
    assert logged.getMessage() == '%s: unexpected error: boom' % (
        error['request_id'])
    assert logged.exc_info[0] is RuntimeError
    assert error['request_id'].startswith('req-')
    assert (status, error['status'], error['title'], error['detail']) == (
        500, 500, 'Internal Server Error',
        'The server has either erred or is incapable of performing the '
        'requested operation.\n\n boom  ')
