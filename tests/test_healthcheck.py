"""/healthcheck: readiness for load balancers and orchestrators
(oslo.middleware's healthcheck), before authentication; 503 from the
moment the process drains (placement_lite/drain.py), whatever other
backends ``[healthcheck]`` names."""

import pytest

from placement_lite import drain
from tests import harness

DRAINING = ('Stopping: serving the requests it accepted, then refusing new '
            'connections.')


@pytest.fixture
def environment():
    made = []

    def make(**overrides):
        made.append(harness.Environment('sqlite', **overrides))
        return made[-1]
    yield make
    for environment in made:
        environment.close()


@pytest.fixture
def stopping(monkeypatch):
    monkeypatch.setattr(drain, 'stopping', lambda: True)


def _check(environment, method='GET', accept='application/json', **extra):
    return environment.respond(method, '/healthcheck', token=None,
                               headers=dict({'accept': accept}, **extra))


def test_ready_needs_no_token(environment):
    status, headers, body = _check(environment())
    assert (status, headers['content-type']) == (200, 'application/json')
    assert body == b'{\n    "detailed": false,\n    "reasons": [\n        "OK"\n    ]\n}'


def test_ready_as_text_and_head(environment):
    ready = environment()
    assert _check(ready, accept='text/plain')[::2] == (200, b'OK')
    assert _check(ready, method='HEAD')[::2] == (204, b'')


def test_a_draining_process_is_not_ready(environment, stopping):
    status, _headers, body = _check(environment(), accept='text/plain')
    assert (status, body) == (503, DRAINING.encode())
    assert _check(environment(), method='HEAD')[::2] == (503, b'')


def test_the_drain_check_stays_beside_the_operators_backends(
        environment, tmp_path, monkeypatch):
    disabled = tmp_path / 'disabled'
    checked = environment(**{
        'healthcheck.backends': ['disable_by_file'],
        'healthcheck.disable_by_file_path': str(disabled)})
    assert _check(checked, accept='text/plain')[::2] == (200, b'OK\nOK')
    disabled.write_text('')
    assert _check(checked, accept='text/plain')[::2] == (
        503, b'OK\nDISABLED BY FILE')
    disabled.unlink()
    monkeypatch.setattr(drain, 'stopping', lambda: True)
    assert _check(checked, accept='text/plain')[::2] == (
        503, (DRAINING + '\nOK').encode())


def test_a_client_outside_the_allowed_ranges_meets_the_api(environment):
    """(The harness's requests come from no address: in no range.)"""
    ranged = environment(**{
        'healthcheck.allowed_source_ranges': ['10.0.0.0/8']})
    status, _headers, body = ranged.request('GET', '/healthcheck')
    assert status == 404
    assert body['errors'][0]['title'] == 'Not Found'
