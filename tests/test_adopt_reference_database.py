"""An operator replaces the reference with placement_lite on the same
database, and can go back.

The reference (openstack-placement 16.0.0, in its own virtual environment)
creates the database with ``placement-manage db sync`` and serves a small
cloud built through its API. ``placement-lite db sync`` then adopts the
database; placement_lite (extensions off: the reference's microversions)
gives the same answers, and with extensions on serves device profiles.
Finally the reference, started again on the database placement_lite
synced (its own start-up sync included), still gives the same answers.

The other way round, a database placement_lite created and filled is
served by the reference with the same answers: an operator who tried
placement_lite first can go to the reference.

On SQLite, PostgreSQL and MariaDB (the reference through PyMySQL).
"""

import json

import os_resource_classes
import pytest
import sqlalchemy as sa

from placement_lite.db import tables
from tests import harness
from tests import servers
from tests.bench import services

pytestmark = [pytest.mark.slow, pytest.mark.mysql]

PROJECT = '8d2ab1c6-0c3c-4d0a-9b53-3b2f1d7f6a11'
USER = 'c3a1b1d2-6a7e-4a44-8f0e-0d7a8e1c2b33'
HOST1 = '11111111-1111-4111-8111-111111111111'
NUMA1 = '22222222-2222-4222-8222-222222222222'
HOST2 = '33333333-3333-4333-8333-333333333333'
STORAGE = '44444444-4444-4444-8444-444444444444'
AGGREGATE = '55555555-5555-4555-8555-555555555555'
CONSUMER = '66666666-6666-4666-8666-666666666666'

#: The cloud, built through the reference's API at 1.39.
BUILD = [
    ('PUT', '/resource_classes/CUSTOM_GOLD', None),
    ('POST', '/resource_providers', {'name': 'host1', 'uuid': HOST1}),
    ('POST', '/resource_providers', {'name': 'host1-numa0', 'uuid': NUMA1,
                                     'parent_provider_uuid': HOST1}),
    ('POST', '/resource_providers', {'name': 'host2', 'uuid': HOST2}),
    ('POST', '/resource_providers', {'name': 'storage', 'uuid': STORAGE}),
    ('PUT', '/resource_providers/%s/inventories' % HOST1, {
        'resource_provider_generation': 0, 'inventories': {
            'MEMORY_MB': {'total': 8192}, 'CUSTOM_GOLD': {'total': 2}}}),
    ('PUT', '/resource_providers/%s/inventories' % NUMA1, {
        'resource_provider_generation': 0, 'inventories': {
            'VCPU': {'total': 8, 'allocation_ratio': 2.0}}}),
    ('PUT', '/resource_providers/%s/inventories' % HOST2, {
        'resource_provider_generation': 0, 'inventories': {
            'VCPU': {'total': 4}, 'MEMORY_MB': {'total': 4096},
            'DISK_GB': {'total': 100, 'reserved': 10}}}),
    ('PUT', '/resource_providers/%s/inventories' % STORAGE, {
        'resource_provider_generation': 0, 'inventories': {
            'DISK_GB': {'total': 2000}}}),
    ('PUT', '/resource_providers/%s/traits' % STORAGE, {
        'resource_provider_generation': 1,
        'traits': ['MISC_SHARES_VIA_AGGREGATE']}),
    ('PUT', '/resource_providers/%s/traits' % HOST1, {
        'resource_provider_generation': 1,
        'traits': ['HW_CPU_X86_AVX2', 'COMPUTE_VOLUME_MULTI_ATTACH']}),
    ('PUT', '/resource_providers/%s/aggregates' % HOST1, {
        'resource_provider_generation': 2, 'aggregates': [AGGREGATE]}),
    ('PUT', '/resource_providers/%s/aggregates' % STORAGE, {
        'resource_provider_generation': 2, 'aggregates': [AGGREGATE]}),
    ('PUT', '/allocations/%s' % CONSUMER, {
        'allocations': {NUMA1: {'resources': {'VCPU': 3}},
                        HOST1: {'resources': {'MEMORY_MB': 1024}},
                        STORAGE: {'resources': {'DISK_GB': 50}}},
        'project_id': PROJECT, 'user_id': USER, 'consumer_generation': None,
        'consumer_type': 'INSTANCE'}),
]

#: What both services are asked, at 1.39. (Not /usages: at 1.38 and later
#: the reference answers it with a 500 on PostgreSQL.)
READS = [
    '/resource_providers',
    '/resource_providers?in_tree=%s' % HOST1,
    '/resource_providers?member_of=%s' % AGGREGATE,
    '/resource_providers?resources=VCPU:2',
    '/resource_providers/%s' % NUMA1,
    '/resource_providers/%s/inventories' % HOST2,
    '/resource_providers/%s/traits' % HOST1,
    '/resource_providers/%s/aggregates' % STORAGE,
    '/resource_providers/%s/usages' % NUMA1,
    '/resource_providers/%s/allocations' % STORAGE,
    '/allocations/%s' % CONSUMER,
    '/resource_classes',
    '/resource_classes/CUSTOM_GOLD',
    '/traits',
    '/traits?associated=true',
    '/allocation_candidates?resources=VCPU:2,MEMORY_MB:512,DISK_GB:10',
    '/allocation_candidates?resources=VCPU:1&required=HW_CPU_X86_AVX2',
    '/allocation_candidates?resources=DISK_GB:20&resources1=CUSTOM_GOLD:1'
    '&group_policy=none',
]


def answers(request, paths=READS):
    """{path: (status, body)} of ``paths`` (:func:`normalised`)."""
    found = {}
    for path in paths:
        status, _headers, body = request('GET', path, version='1.39')
        found[path] = (status, normalised(body))
    return found


def normalised(body):
    """An answer's body with the lists whose order the API leaves open
    sorted (the reference on PostgreSQL lists providers and traits in no
    fixed order, and candidates and mappings in set order) and an error's
    request id left out."""
    for error in body.get('errors', []):
        error.pop('request_id', None)
    body.get('resource_providers', []).sort(key=lambda rp: rp['uuid'])
    body.get('traits', []).sort()
    body.get('resource_classes', []).sort(key=lambda rc: rc['name'])
    for summary in body.get('provider_summaries', {}).values():
        summary['traits'].sort()
    for candidate in body.get('allocation_requests', []):
        for providers in candidate['mappings'].values():
            providers.sort()
    body.get('allocation_requests', []).sort(
        key=lambda candidate: json.dumps(candidate, sort_keys=True))
    return body


def build(request):
    """Build the cloud (BUILD) through ``request``."""
    for method, path, body in BUILD:
        status, _headers, answer = request(method, path, body,
                                           version='1.39')
        assert status in (200, 201, 204), (method, path, status, answer)


def _reference_answers(reference):
    """The answers of the reference, started for them."""
    reference.start()
    try:
        return answers(services.HttpClient(reference.port,
                                           timeout=60).request)
    finally:
        reference.stop()


def test_placement_lite_adopts_the_reference_database(backend, tmp_path):
    venv = services.reference_venv(log=lambda _message: None)
    url = harness.empty_database_url(backend)
    workdir = str(tmp_path / 'reference')
    reference = services.reference(harness._free_port(), url, workdir, venv,
                                   processes=1)
    reference.start()
    try:
        client = services.HttpClient(reference.port, timeout=60)
        build(client.request)
        expected = answers(client.request)
    finally:
        reference.stop()

    synced = servers.db_sync(workdir)
    assert synced.returncode == 0, synced.stderr

    lite = harness.Environment(backend, database_url=url,
                               **{'api.enable_extensions': False})
    try:
        assert answers(lite.request) == expected
    finally:
        lite.close()
    extended = harness.Environment(backend, database_url=url)
    try:
        assert extended.request('GET', '/device_profiles')[::2] == (
            200, {'device_profiles': []})
    finally:
        extended.close()
    assert servers.db_sync(workdir).returncode == 0

    assert _reference_answers(reference) == expected


def test_the_reference_serves_a_database_placement_lite_created(backend,
                                                                tmp_path):
    url = harness.empty_database_url(backend)
    workdir = tmp_path / 'placement_lite'
    workdir.mkdir()
    (workdir / 'placement.conf').write_text(
        '[placement_database]\nconnection = %s\n' % url)
    synced = servers.db_sync(str(workdir))
    assert synced.returncode == 0, synced.stderr
    lite = harness.Environment(backend, database_url=url,
                               **{'api.enable_extensions': False})
    try:
        build(lite.request)
        expected = answers(lite.request)
    finally:
        lite.close()

    reference = services.reference(
        harness._free_port(), url, str(tmp_path / 'reference'),
        services.reference_venv(log=lambda _message: None), processes=1)
    assert _reference_answers(reference) == expected


def test_placement_lite_names_the_standard_classes_first(backend, tmp_path):
    """The reference's schema, synced but never served: placement_lite is
    the first to add the standard resource classes, each with its own id,
    0 included (on MariaDB an id of 0 in an AUTO_INCREMENT column takes
    the next value unless the session says otherwise)."""
    url = harness.empty_database_url(backend)
    workdir = str(tmp_path / 'reference')
    services.reference(harness._free_port(), url, workdir,
                       services.reference_venv(log=lambda _message: None))
    synced = servers.db_sync(workdir)
    assert synced.returncode == 0, synced.stderr
    lite = harness.Environment(backend, database_url=url)
    try:
        with lite.db.reader() as conn:
            rc = tables.resource_classes
            ids = dict(conn.execute(sa.select(rc.c.name, rc.c.id)).all())
        assert ids == {name: index for index, name
                       in enumerate(os_resource_classes.STANDARDS)}
    finally:
        lite.close()
