"""Hostile requests over every route: never a 5xx, never a traceback, and
a refused request changes nothing.

hypothesis generates requests to each route of the application (paths
whose fields are existing names and uuids or hostile strings), with any
method, microversion, Accept and content type, hostile query strings and
bodies: bytes, JSON built from hostile values (NUL, lone surrogates, huge
and negative numbers, deep nesting, long strings), and valid bodies of
the route with one value replaced by a hostile one, which get furthest.
Each request is made in-process on a small world (providers with
inventories, traits, aggregates and allocations, a device profile); the
whole database is read after each one and must be unchanged by a 4xx.
"""

import io
import json
import re
import urllib.parse

from hypothesis import HealthCheck
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
import pytest
import sqlalchemy as sa

from placement_lite import app as placement_app
from placement_lite import routes as served_routes
from placement_lite.db import tables
from tests import harness

#: Requests generated per backend; with the database read after each, the
#: two backends take about a minute on two cores.
EXAMPLES = 800

PROVIDER = 'a6d0b6c2-0f36-4dbe-8d06-9f1a3f1f0a01'
CHILD = 'a6d0b6c2-0f36-4dbe-8d06-9f1a3f1f0a02'
CONSUMER = 'c0c0c0c0-0f36-4dbe-8d06-9f1a3f1f0a03'
AGGREGATE = 'a66a66a6-0f36-4dbe-8d06-9f1a3f1f0a04'
PROFILE = 'gpu-profile'

#: Methods no route declares, sent now and then.
OTHER_METHODS = ['HEAD', 'PATCH', 'OPTIONS', 'TRACE']

#: Hostile scalars: what a database, an int() or an encoder may choke on.
HOSTILE_TEXT = st.one_of(
    st.sampled_from(['', '\x00', 'CUSTOM_\x00', '\ud800', '\udfff',
                     'x' * 5000, '<' * 3000, '%00', '..', '/', '\\',
                     ' VCPU', 'VCPU ', '\u2603', 'CUSTOM_' + 'A' * 300,
                     '9' * 30, '-1', '0', 'null', 'in:', '!', '!in:',
                     PROVIDER, PROVIDER.upper(), PROVIDER.replace('-', ''),
                     '{%s}' % PROVIDER, 'urn:uuid:' + PROVIDER]),
    st.text(max_size=40),
)
HOSTILE_NUMBERS = st.one_of(
    st.sampled_from([0, -1, 2 ** 31 - 1, 2 ** 31, 2 ** 63 - 1, 2 ** 63,
                     2 ** 64, -2 ** 63 - 1, 10 ** 100, 1e308, -1e308,
                     3.5e38, 0.5, True, False, None]),
    st.integers(), st.floats(allow_nan=False))
HOSTILE_SCALARS = st.one_of(HOSTILE_TEXT, HOSTILE_NUMBERS)
HOSTILE_JSON = st.recursive(
    HOSTILE_SCALARS,
    lambda children: st.one_of(st.lists(children, max_size=4),
                               st.dictionaries(HOSTILE_TEXT, children,
                                               max_size=4)),
    max_leaves=12)


def _deep(depth):
    return '[' * depth + ']' * depth


HOSTILE_BODIES = st.one_of(
    st.binary(max_size=64),
    st.sampled_from([b'\xef\xbb\xbf{}', b'{"a": 1', b'\xff\xfe{}',
                     '{"name": "\\ud800"}'.encode(),
                     '{"name": "\\u0000"}'.encode(),
                     _deep(100).encode(), _deep(5000).encode(),
                     ('{"a": %s}' % ('9' * 5000)).encode(),
                     b'{"a": NaN}', b'{"a": Infinity}', b'1e999']),
)

_ALLOCATION = {'allocations': {PROVIDER: {'resources': {'VCPU': 1}}},
               'project_id': 'p', 'user_id': 'u', 'consumer_generation': 1,
               'consumer_type': 'INSTANCE'}
_INVENTORY = {'total': 8, 'reserved': 0, 'min_unit': 1, 'max_unit': 8,
              'step_size': 1, 'allocation_ratio': 1.0}
#: A valid body of each route that takes one, which a mutation (one value
#: replaced by a hostile one) makes hostile.
VALID_BODIES = {
    ('POST', '/resource_providers'): {
        'name': 'new', 'uuid': 'b6d0b6c2-0f36-4dbe-8d06-9f1a3f1f0a09',
        'parent_provider_uuid': PROVIDER},
    ('PUT', '/resource_providers/{uuid}'): {
        'name': 'renamed', 'parent_provider_uuid': None},
    ('PUT', '/resource_providers/{uuid}/inventories'): {
        'resource_provider_generation': 3,
        'inventories': {'VCPU': _INVENTORY, 'CUSTOM_GOLD': {'total': 1}}},
    ('POST', '/resource_providers/{uuid}/inventories'): dict(
        _INVENTORY, resource_class='CUSTOM_GOLD',
        resource_provider_generation=3),
    ('PUT', '/resource_providers/{uuid}/inventories/{resource_class}'):
        dict(_INVENTORY, resource_provider_generation=3),
    ('PUT', '/resource_providers/{uuid}/traits'): {
        'resource_provider_generation': 3, 'traits': ['CUSTOM_HOSTILE']},
    ('PUT', '/resource_providers/{uuid}/aggregates'): {
        'resource_provider_generation': 3, 'aggregates': [AGGREGATE]},
    ('PUT', '/allocations/{consumer_uuid}'): _ALLOCATION,
    ('POST', '/allocations'): {CONSUMER: _ALLOCATION},
    ('POST', '/reshaper'): {
        'inventories': {PROVIDER: {'resource_provider_generation': 3,
                                   'inventories': {'VCPU': _INVENTORY}}},
        'allocations': {CONSUMER: _ALLOCATION}},
    ('POST', '/resource_classes'): {'name': 'CUSTOM_NEW'},
    ('PUT', '/resource_classes/{name}'): {'name': 'CUSTOM_NEW'},
    ('POST', '/device_profiles'): {
        'name': 'other-profile', 'description': 'd',
        'groups': [{'resources:VCPU': '1',
                    'trait:CUSTOM_HOSTILE': 'required'}]},
    ('POST', '/allocation_claims'): {
        'consumers': {CONSUMER: {
            key: _ALLOCATION[key] for key in (
                'project_id', 'user_id', 'consumer_generation',
                'consumer_type')}},
        'trees': 'distinct'},
}

#: A valid query of the routes that need one, which hostile pairs join.
VALID_QUERIES = {
    '/allocation_candidates': 'resources=VCPU:1',
    '/allocation_claims': 'resources=VCPU:1',
    '/resource_providers': 'resources=VCPU:1',
    '/usages': 'project_id=p',
}
QUERY_NAMES = ['resources', 'limit', 'member_of', 'required', 'in_tree',
               'name', 'uuid', 'root_required', 'same_subtree',
               'group_policy', 'resources1', 'required_x', 'member_of1',
               'project_id', 'user_id', 'consumer_type', 'associated',
               'in_tree1', 'root_member_of', 'explain', 'bogus']
QUERY_VALUES = st.one_of(
    HOSTILE_TEXT,
    st.sampled_from(['VCPU:1', 'VCPU:9223372036854775808', 'VCPU:0',
                     'VCPU:1,VCPU:2', 'in:' + AGGREGATE, '!' + AGGREGATE,
                     'CUSTOM_HOSTILE,!HW_CPU_X86_VMX', 'isolate', 'none',
                     '1', '9223372036854775808', '9' * 5000, PROVIDER,
                     'true', '_x,_y', 'isolate:1,_x', '1,!_x']))


def _paths():
    """Every route's path, its fields filled in from the world or hostile."""
    fields = {
        'uuid': st.one_of(st.sampled_from([PROVIDER, CHILD]), HOSTILE_TEXT),
        'consumer_uuid': st.one_of(st.just(CONSUMER), HOSTILE_TEXT),
        'resource_class': st.one_of(
            st.sampled_from(['VCPU', 'DISK_GB', 'CUSTOM_GOLD']),
            HOSTILE_TEXT),
        'name': st.one_of(st.sampled_from(['CUSTOM_GOLD', 'CUSTOM_HOSTILE',
                                           'VCPU', 'HW_CPU_X86_VMX']),
                          HOSTILE_TEXT),
        'uuid_or_name': st.one_of(st.just(PROFILE), HOSTILE_TEXT),
    }
    routes = [(path, placement_app._declared_methods(resource))
              for path, resource in served_routes.served(True)]
    routes += [('//resource_providers', ['GET']),
               ('/resource_providers//', ['GET'])]

    @st.composite
    def method_and_path(draw):
        route, methods = draw(st.sampled_from(routes))
        method = draw(st.sampled_from(methods * 4 + OTHER_METHODS))
        template = route
        for name, strategy in fields.items():
            if '{%s}' % name in template:
                value = draw(strategy)
                template = template.replace(
                    '{%s}' % name, urllib.parse.quote(value, safe='',
                                                      errors='surrogatepass'))
        return method, route, template

    return method_and_path()


def _mutate(draw, value):
    """``value`` with one of its leaves (or itself) replaced."""
    if isinstance(value, dict) and value and draw(st.booleans()):
        key = draw(st.sampled_from(sorted(value)))
        copy = dict(value)
        if draw(st.integers(0, 5)) == 0:
            copy[draw(HOSTILE_TEXT)] = copy.pop(key)
        else:
            copy[key] = _mutate(draw, value[key])
        return copy
    if isinstance(value, list) and value and draw(st.booleans()):
        index = draw(st.integers(0, len(value) - 1))
        return value[:index] + [_mutate(draw, value[index])] + value[
            index + 1:]
    return draw(HOSTILE_JSON)


def _body(draw, method, template):
    """Mostly the route's valid body, mutated; otherwise none, hostile
    bytes or hostile JSON."""
    valid = VALID_BODIES.get((method, template))
    kind = draw(st.integers(0, 5 if valid else 2))
    if kind == 0:
        return b''
    if kind == 1:
        return draw(HOSTILE_BODIES)
    if kind == 2:
        document = draw(HOSTILE_JSON)
    else:
        document = _mutate(draw, valid)
    return json.dumps(document).encode()


@st.composite
def requests(draw):
    pairs = draw(st.lists(st.tuples(st.sampled_from(QUERY_NAMES),
                                    QUERY_VALUES), max_size=4))
    # Lone surrogates become '?': in a query string they are invalid UTF-8,
    # which is another test's subject.
    method, route, path = draw(_paths())
    base = [VALID_QUERIES[route]] if route in VALID_QUERIES else []
    query = '&'.join(base + [
        '%s=%s' % (name, urllib.parse.quote(value, safe='', errors='replace'))
        for name, value in pairs])
    headers = {
        'OPENSTACK_API_VERSION': 'placement ' + draw(st.sampled_from(
            ['latest'] * 6 + ['1.0', '1.10', '1.20', '1.28', '1.36', '1.38',
                              '1.39', '1.40', '1.41', '1.42', '1.43', '1.44',
                              '1.999', '2.0', 'x', ''])),
        'ACCEPT': draw(st.sampled_from(['application/json'] * 6 + [
            '*/*', 'text/html', ';;;,,=', 'a/b'])),
    }
    body = _body(draw, method, route)
    if body:
        headers['CONTENT_TYPE'] = draw(st.sampled_from(
            ['application/json'] * 4 + ['text/plain', 'application/json; x']))
    return method, path, query, body, headers


def _call(app, method, path, query, body, headers):
    environ = {
        'REQUEST_METHOD': method, 'SCRIPT_NAME': '',
        'PATH_INFO': urllib.parse.unquote(path, errors='surrogateescape')
        .encode('utf-8', 'surrogateescape').decode('latin-1'),
        'QUERY_STRING': query, 'SERVER_NAME': 'localhost',
        'SERVER_PORT': '80', 'SERVER_PROTOCOL': 'HTTP/1.1',
        'wsgi.url_scheme': 'http', 'wsgi.input': io.BytesIO(body),
        'wsgi.errors': io.StringIO(), 'CONTENT_LENGTH': str(len(body)),
        'HTTP_X_AUTH_TOKEN': 'admin',
    }
    for name, value in headers.items():
        key = name if name == 'CONTENT_TYPE' else 'HTTP_' + name
        environ[key] = value
    captured = {}

    def start_response(status, response_headers, exc_info=None):
        captured['status'] = int(status.split()[0])

    raw = b''.join(app(environ, start_response))
    return captured['status'], raw


def _snapshot(db):
    """Every row of every table, in a stable order."""
    with db.engine.connect() as conn:
        return {table.name: sorted(
            conn.execute(sa.select(table)).all(), key=repr)
            for table in tables.metadata.sorted_tables}


def _seed(env):
    calls = [
        ('PUT', '/resource_classes/CUSTOM_GOLD', None),
        ('PUT', '/traits/CUSTOM_HOSTILE', None),
        ('POST', '/resource_providers', {'name': 'cn', 'uuid': PROVIDER}),
        ('POST', '/resource_providers', {'name': 'numa', 'uuid': CHILD,
                                         'parent_provider_uuid': PROVIDER}),
        ('PUT', '/resource_providers/%s/inventories' % PROVIDER,
         {'resource_provider_generation': 0,
          'inventories': {'VCPU': {'total': 8}, 'DISK_GB': {'total': 100},
                          'CUSTOM_GOLD': {'total': 2}}}),
        ('PUT', '/resource_providers/%s/traits' % PROVIDER,
         {'resource_provider_generation': 1,
          'traits': ['CUSTOM_HOSTILE', 'HW_CPU_X86_VMX']}),
        ('PUT', '/resource_providers/%s/aggregates' % PROVIDER,
         {'resource_provider_generation': 2, 'aggregates': [AGGREGATE]}),
        ('PUT', '/allocations/%s' % CONSUMER,
         {'allocations': {PROVIDER: {'resources': {'VCPU': 2}}},
          'project_id': 'p', 'user_id': 'u', 'consumer_generation': None,
          'consumer_type': 'INSTANCE'}),
        ('POST', '/device_profiles',
         {'name': PROFILE, 'groups': [{'resources:VCPU': '1'}]}),
    ]
    for method, path, body in calls:
        status, _headers, answer = env.request(method, path, body)
        assert status < 300, (path, answer)


@pytest.mark.slow
def test_no_hostile_request_fails_or_changes_a_refused_write(backend):
    env = harness.Environment(backend)
    try:
        _seed(env)
        before = [_snapshot(env.db)]
        statuses = []

        @settings(max_examples=EXAMPLES, deadline=None, database=None,
                  suppress_health_check=list(HealthCheck))
        @given(requests())
        def check(request):
            status, raw = _call(env.app, *request)
            statuses.append(status)
            assert status < 500, (request, raw[:2000])
            assert b'Traceback' not in raw, (request, raw[:2000])
            after = _snapshot(env.db)
            if status >= 400:
                assert after == before[0], request
            before[0] = after

        check()
        print('\n[%s] %d hostile requests, %d answered 5xx, statuses %s'
              % (backend, len(statuses),
                 sum(status >= 500 for status in statuses),
                 {s: statuses.count(s) for s in sorted(set(statuses))}))
    finally:
        env.close()


def test_a_double_slash_is_no_route(environment):
    """``//resource_providers`` is a 404, as in the reference (gabbi would
    read it as a host name)."""
    status, _headers, _body = environment.request('GET', '//resource_providers')
    assert status == 404


def test_an_error_quoting_a_huge_value_is_cut(environment):
    """A 400 quoting a 1 MB name says so in 64 KiB, not in 2 MB."""
    status, _headers, body = environment.request(
        'POST', '/resource_providers', {'name': 'x' * 1_000_000})
    detail = body['errors'][0]['detail']
    assert status == 400
    assert detail.startswith(
        'The server could not comply with the request since it is either '
        'malformed or otherwise incorrect.\n\n JSON does not validate: ')
    assert re.search(r'\.\.\. \((\d+) more characters\)  $', detail)
    assert len(detail) < 66_000
