"""Schemathesis against the live service (uwsgi, as in production), on each
backend: requests generated from api-ref/openapi.yaml, valid ones and
invalid ones, a bounded number per operation.

Fails on a server error, a response the document does not describe (status,
media type, body), or a 4xx answer after which the database differs from
before the request (a refused request must change nothing). The database is
compared, table by table, after every request.
"""

import collections
import hashlib

import hypothesis
from hypothesis import strategies as st
import pytest
import requests
import schemathesis
from schemathesis import checks
import sqlalchemy as sa

from placement_lite.db import tables
from tests import harness
from tests import servers
from tests.openapi import document

pytestmark = pytest.mark.slow

#: Examples per operation and generation mode (valid, invalid data).
EXAMPLES = 8
CHECKS = [checks.not_a_server_error, checks.status_code_conformance,
          checks.content_type_conformance,
          checks.response_schema_conformance]
#: A provider the generated requests may name, so that not every
#: provider route answers 404.
PROVIDER = 'b5c1a6c4-4e0e-4f4a-9a4e-5a1f7f1e2c01'


#: Tables left out of the comparison: projects, users and consumer types
#: are recorded the first time a write names them, in a transaction of
#: their own, and kept when the write then fails (a consumer generation
#: conflict is a 409), as the reference keeps them. No route shows them.
_LOOKUP_TABLES = ('projects', 'users', 'consumer_types')


def _digest(engine):
    """A hash of every row of every table the API shows."""
    digest = hashlib.sha256()
    with engine.connect() as conn:
        for table in tables.metadata.sorted_tables:
            if table.name in _LOOKUP_TABLES:
                continue
            rows = conn.execute(sa.select(table)).all()
            digest.update(repr(sorted(map(repr, rows))).encode())
    return digest.hexdigest()


def _seed(port):
    servers.request(port, 'POST', '/resource_providers',
                    {'name': 'seeded', 'uuid': PROVIDER})
    servers.request(port, 'PUT', '/resource_providers/%s/inventories'
                    % PROVIDER, {'resource_provider_generation': 0,
                                 'inventories': {'VCPU': {'total': 8}}})


def test_schemathesis(backend):
    db = harness.fresh_database(backend)
    server = servers.Uwsgi(db.url, processes=2)
    session = requests.Session()
    schema = schemathesis.openapi.from_path(document.PATH)
    failures, data_changed, statuses = [], [], []
    try:
        _seed(server.port)
        state = {'digest': _digest(db.engine)}
        for result in schema.get_all_operations():
            operation = result.ok()
            strategies = []
            for mode in (schemathesis.GenerationMode.POSITIVE,
                         schemathesis.GenerationMode.NEGATIVE):
                strategies.append(operation.as_strategy(generation_mode=mode))
                if '{uuid}' in operation.path:
                    strategies.append(operation.as_strategy(
                        generation_mode=mode,
                        path_parameters={'uuid': PROVIDER}))
            for case in _generated(operation.label, st.one_of(strategies)):
                _send(case, server, session, db, state, failures,
                      data_changed, statuses)
    finally:
        server.cleanup()
        db.dispose()
    print('\n[%s] %d requests generated, %d answered 5xx, %d failures, %d '
          'data-changing 4xx; statuses: %s' % (
              backend, len(statuses), sum(s >= 500 for s in statuses),
              len(failures), len(data_changed),
              sorted(collections.Counter(statuses).items())))
    assert not failures, '\n\n'.join(failures[:20])
    assert not data_changed, '\n'.join(data_changed[:20])


#: {operation: the cases generated for it}, in this process.
_GENERATED = {}


def _generated(operation, strategy):
    """The cases hypothesis generates from ``strategy``, made once per
    process: derandomized, they are the same for every backend, and
    generating them took half of the test's time."""
    if operation not in _GENERATED:
        cases = []

        @hypothesis.settings(
            max_examples=EXAMPLES * 2, deadline=None, database=None,
            derandomize=True, phases=[hypothesis.Phase.generate],
            suppress_health_check=list(hypothesis.HealthCheck))
        @hypothesis.given(strategy)
        def generate(case):
            cases.append(case)

        generate()
        _GENERATED[operation] = cases
    return _GENERATED[operation]


def _send(case, server, session, db, state, failures, data_changed,
          statuses):
    headers = {'x-auth-token': 'admin'}
    try:
        response = case.call(base_url=server.url, session=session,
                             headers=headers)
    except requests.Timeout:
        # Seen once in several CI runs on SQLite: a write answered
        # after more than 10 s, never again when run alone. Sent again
        # on a new connection; only a second timeout fails the test.
        session.close()
        try:
            response = case.call(base_url=server.url, session=session,
                                 headers=headers, timeout=60)
        except requests.RequestException as exc:
            failures.append('%s: %s' % (case.as_curl_command(), exc))
            return
    except requests.RequestException as exc:
        failures.append('%s: %s' % (case.as_curl_command(), exc))
        return
    statuses.append(response.status_code)
    after = _digest(db.engine)
    if 400 <= response.status_code < 500 and after != state['digest']:
        data_changed.append('%d: %s' % (response.status_code,
                                        case.as_curl_command(headers)))
    state['digest'] = after
    try:
        case.validate_response(response, checks=CHECKS, headers=headers)
    except AssertionError as exc:
        failures.append('%s\n%s' % (case.as_curl_command(headers), exc))
