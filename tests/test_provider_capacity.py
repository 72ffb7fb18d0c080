"""Provider behaviour that depends on inventories and allocations.

Inventory and allocation rows are written straight into the database here,
so these tests pin the provider routes' own rules (the ``resources`` filter's
capacity arithmetic, deletion of providers in use) independently of the
routes that normally write those rows.
"""

import pytest
import sqlalchemy as sa

from placement_lite.db import tables

COMPUTE = '0c000000-0000-4000-8000-000000000001'
STORAGE = '0c000000-0000-4000-8000-000000000002'
VCPU, MEMORY_MB, DISK_GB = 0, 1, 2  # standard ids: os_resource_classes order


def _provider(environment, uuid, name, parent=None):
    body = {'name': name, 'uuid': uuid}
    if parent:
        body['parent_provider_uuid'] = parent
    status, _headers, _body = environment.request(
        'POST', '/resource_providers', body, version='1.20')
    assert status == 200
    with environment.db.reader() as conn:
        return conn.execute(sa.select(tables.resource_providers.c.id).where(
            tables.resource_providers.c.uuid == uuid)).scalar_one()


def _inventory(environment, provider_id, class_id, total, reserved=0,
               min_unit=1, max_unit=None, step_size=1, allocation_ratio=1.0):
    with environment.db.writer() as conn:
        conn.execute(tables.inventories.insert().values(
            resource_provider_id=provider_id, resource_class_id=class_id,
            total=total, reserved=reserved, min_unit=min_unit,
            max_unit=total if max_unit is None else max_unit,
            step_size=step_size, allocation_ratio=allocation_ratio))
        # As every inventory write must (see tests/generation_guard.py).
        rp = tables.resource_providers
        conn.execute(rp.update().where(rp.c.id == provider_id)
                     .values(generation=rp.c.generation + 1))


def _allocation(environment, provider_id, class_id, used,
                consumer='0c000000-0000-4000-8000-0000000000cc'):
    with environment.db.writer() as conn:
        conn.execute(tables.allocations.insert().values(
            resource_provider_id=provider_id, resource_class_id=class_id,
            consumer_id=consumer, used=used))


def _names(environment, query):
    status, _headers, body = environment.request(
        'GET', '/resource_providers?' + query, version='1.39')
    assert status == 200, body
    return [provider['name'] for provider in body['resource_providers']]


@pytest.fixture
def compute(environment):
    """8 VCPU, 2 reserved, ratio 1.5 (capacity 9), 4 used: room for 5;
    amounts between 1 and 6 in steps of 1; 2048 MB of memory, none used."""
    provider_id = _provider(environment, COMPUTE, 'compute')
    _inventory(environment, provider_id, VCPU, total=8, reserved=2,
               max_unit=6, allocation_ratio=1.5)
    _inventory(environment, provider_id, MEMORY_MB, total=2048,
               min_unit=256, step_size=256)
    _allocation(environment, provider_id, VCPU, 3)
    _allocation(environment, provider_id, VCPU, 1,
                consumer='0c000000-0000-4000-8000-0000000000dd')
    return provider_id


@pytest.mark.parametrize('query, expected', [
    ('resources=VCPU:5', ['compute']),
    ('resources=VCPU:6', []),                       # 4 used + 6 > 9
    ('resources=MEMORY_MB:2048', ['compute']),
    ('resources=MEMORY_MB:128', []),                 # below min_unit
    ('resources=MEMORY_MB:300', []),                 # not a step of 256
    ('resources=VCPU:1,MEMORY_MB:512', ['compute']),
    ('resources=VCPU:1,MEMORY_MB:4096', []),         # one class short
    ('resources=DISK_GB:1', []),                     # no inventory of it
    ('resources=VCPU:6,VCPU:1', ['compute']),        # the last amount counts
])
def test_resources_filter_checks_capacity(environment, compute, query,
                                          expected):
    assert _names(environment, query) == expected


def test_max_unit_limits_one_request(environment):
    provider_id = _provider(environment, COMPUTE, 'compute')
    _inventory(environment, provider_id, VCPU, total=16, max_unit=4)
    assert _names(environment, 'resources=VCPU:4') == ['compute']
    assert _names(environment, 'resources=VCPU:5') == []


def test_resources_filter_combines_with_tree(environment, compute):
    storage_id = _provider(environment, STORAGE, 'storage', parent=COMPUTE)
    _inventory(environment, storage_id, DISK_GB, total=100)
    assert _names(environment, 'resources=DISK_GB:10&in_tree=' + COMPUTE) == [
        'storage']
    assert _names(environment, 'resources=VCPU:1&in_tree=' + STORAGE) == [
        'compute']


def test_provider_with_allocations_cannot_be_deleted(environment, compute):
    status, _headers, body = environment.request(
        'DELETE', '/resource_providers/' + COMPUTE, version='1.23')
    assert status == 409
    assert body['errors'][0]['code'] == 'placement.resource_provider.inuse'
    assert body['errors'][0]['detail'] == (
        'There was a conflict when trying to complete your request.\n\n '
        'Unable to delete resource provider %s: Resource provider has '
        'allocations.  ' % COMPUTE)
    with environment.db.reader() as conn:
        inventories = conn.execute(sa.select(sa.func.count()).select_from(
            tables.inventories)).scalar_one()
    assert inventories == 2


def test_children_are_checked_before_allocations(environment, compute):
    _provider(environment, STORAGE, 'storage', parent=COMPUTE)
    status, _headers, body = environment.request(
        'DELETE', '/resource_providers/' + COMPUTE, version='1.23')
    assert status == 409
    assert body['errors'][0]['code'] == (
        'placement.resource_provider.cannot_delete_parent')


def test_delete_removes_inventories_and_links(environment):
    provider_id = _provider(environment, COMPUTE, 'compute')
    _inventory(environment, provider_id, VCPU, total=8)
    assert environment.request(
        'PUT', '/resource_providers/%s/traits' % COMPUTE,
        {'traits': ['HW_CPU_X86_AVX'], 'resource_provider_generation': 1},
        version='1.23')[0] == 200
    assert environment.request(
        'PUT', '/resource_providers/%s/aggregates' % COMPUTE,
        {'aggregates': ['0a000000-0000-4000-8000-00000000000a'],
         'resource_provider_generation': 2}, version='1.23')[0] == 200

    status, _headers, _body = environment.request(
        'DELETE', '/resource_providers/' + COMPUTE, version='1.23')

    assert status == 204
    with environment.db.reader() as conn:
        for table in (tables.inventories, tables.resource_provider_traits,
                      tables.resource_provider_aggregates,
                      tables.resource_providers):
            count = conn.execute(
                sa.select(sa.func.count()).select_from(table)).scalar_one()
            assert count == 0, table.name
        # The aggregate itself outlives its last member, as in the reference.
        assert conn.execute(sa.select(sa.func.count()).select_from(
            tables.placement_aggregates)).scalar_one() == 1
