"""One log line per request, through oslo.log with the request's ids."""

import http.client
import logging
import re
import uuid

import pytest

from tests import harness
from tests import servers

pytestmark = pytest.mark.slow

TIME = re.compile(r' time: \d+\.\d ms')


def _request_lines(caplog):
    return [TIME.sub(' time: T ms', record.getMessage())
            for record in caplog.records
            if record.name == 'placement_lite.requestlog']


@pytest.fixture
def logged(caplog):
    caplog.set_level(logging.INFO, logger='placement_lite.requestlog')
    return caplog


def test_each_request_is_one_line(environment, logged):
    environment.request('GET', '/resource_providers?name=a%20b',
                        version='1.14')
    environment.request('GET', '/traits', token=None)
    environment.request('GET', '/allocation_candidates?resources=VCPU:1',
                        version='1.39')

    [listing, unauthorized, candidates] = _request_lines(logged)
    assert listing == ('- "GET /resource_providers?name=a%20b" status: 200 '
                       'len: 26 microversion: 1.14 time: T ms')
    assert unauthorized == ('- "GET /traits" status: 401 len: 316 '
                            'microversion: - time: T ms')
    assert candidates == (
        '- "GET /allocation_candidates?resources=VCPU:1" status: 200 '
        'len: 53 microversion: 1.39 time: T ms candidates: 0 trees: 0')


def test_candidates_found_are_counted(environment, logged):
    provider = str(uuid.uuid4())
    environment.request('POST', '/resource_providers',
                        {'name': 'host', 'uuid': provider})
    environment.request('PUT', '/resource_providers/%s/inventories' % provider,
                        {'resource_provider_generation': 0,
                         'inventories': {'VCPU': {'total': 4}}})
    logged.clear()

    environment.request('GET', '/allocation_candidates?resources=VCPU:1')

    [line] = _request_lines(logged)
    assert line.endswith(' candidates: 1 trees: 1')


def test_a_slow_candidates_request_is_a_warning(backend, logged):
    env = harness.Environment(backend, **{'api.log_slow_candidates_after':
                                          1e-9})
    try:
        env.request('GET', '/allocation_candidates?resources=VCPU:1')
        env.request('GET', '/resource_providers')
    finally:
        env.close()

    warnings = [record.getMessage() for record in logged.records
                if record.levelname == 'WARNING']
    assert len(warnings) == 1
    assert re.fullmatch(r'Slow allocation candidates request \(\d+ ms\): '
                        r'/allocation_candidates\?resources=VCPU:1',
                        warnings[0])


def test_uwsgi_logs_through_oslo_log_with_both_request_ids(backend, tmp_path):
    """The line an operator reads in log_file: oslo.log's context format,
    global request id (sent by the client) then the request's own."""
    db = harness.fresh_database(backend)
    db_url = db.engine.url.render_as_string(hide_password=False)
    db.dispose()
    log_file = tmp_path / 'placement.log'
    uwsgi = servers.Uwsgi(db_url, processes=1, extra_conf=(
        '[DEFAULT]\nlog_file = %s\n' % log_file))
    global_id = 'req-%s' % uuid.uuid4()
    try:
        conn = http.client.HTTPConnection('127.0.0.1', uwsgi.port, timeout=30)
        conn.request('GET', '/resource_providers?name=x', headers={
            'x-auth-token': 'admin', 'openstack-api-version': 'placement 1.28',
            'x-openstack-request-id': global_id})
        response = conn.getresponse()
        response.read()
        own_id = response.getheader('x-openstack-request-id')
    finally:
        uwsgi.cleanup()

    lines = [line for line in log_file.read_text().splitlines()
             if 'placement_lite.requestlog' in line
             and '/resource_providers' in line]
    assert len(lines) == 1
    assert re.fullmatch(
        r'\S+ \S+ \d+ INFO placement_lite\.requestlog \[%s %s admin admin '
        r'[^\]]*\] 127\.0\.0\.1 "GET /resource_providers\?name=x" '
        r'status: 200 len: 26 microversion: 1\.28 time: \d+\.\d ms'
        % (global_id, own_id), lines[0]), lines[0]
