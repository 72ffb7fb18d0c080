"""Inventory replacement as the reshaper uses it: inside a caller's
transaction, all or nothing, with the provider generation moving once per
replacement. The HTTP routes are covered by the gabbits."""

import types
import uuid

import pytest
import sqlalchemy as sa

from placement_lite.db import lookups
from placement_lite.db import tables
from placement_lite.domain import inventories
from placement_lite.domain import resource_classes


def _provider(conn, name):
    """A root provider straight in the database (the routes are elsewhere)."""
    rp = tables.resource_providers
    provider_uuid = str(uuid.uuid4())
    provider_id = conn.execute(rp.insert().values(
        uuid=provider_uuid, name=name, generation=0)).inserted_primary_key[0]
    conn.execute(rp.update().where(rp.c.id == provider_id)
                 .values(root_provider_id=provider_id))
    return lookups.provider_by_uuid(conn, provider_uuid)


def _at(provider, generation):
    """The provider as a caller that expects ``generation`` sees it."""
    return types.SimpleNamespace(id=provider.id, uuid=provider.uuid,
                                 generation=generation)


def _allocate(conn, provider, class_name, used):
    class_id = resource_classes.ids_by_name(conn, [class_name])[class_name]
    conn.execute(tables.allocations.insert().values(
        resource_provider_id=provider.id, consumer_id=str(uuid.uuid4()),
        resource_class_id=class_id, used=used))


def _stored(db, provider_uuid):
    generation, found = inventories.get_inventories(db, provider_uuid)
    return generation, {inv.resource_class: inv.values() for inv in found}


@pytest.fixture
def db(environment):
    return environment.db


def test_replacement_adds_updates_and_deletes(db):
    with db.writer() as conn:
        provider = _provider(conn, 'one')
        inventories.set_provider_inventories(conn, provider, [
            inventories.Inventory('VCPU', 8),
            inventories.Inventory('DISK_GB', 100)])
    with db.writer() as conn:
        provider = lookups.provider_by_uuid(conn, provider.uuid)
        new_generation = inventories.set_provider_inventories(conn, provider, [
            inventories.Inventory('VCPU', 16, reserved=2,
                                  allocation_ratio=4.0),
            inventories.Inventory('MEMORY_MB', 1024, max_unit=512)])
    assert new_generation == 2
    generation, stored = _stored(db, provider.uuid)
    assert generation == 2
    assert stored == {
        'VCPU': {'total': 16, 'reserved': 2, 'min_unit': 1,
                 'max_unit': 2 ** 31 - 1, 'step_size': 1,
                 'allocation_ratio': 4.0},
        'MEMORY_MB': {'total': 1024, 'reserved': 0, 'min_unit': 1,
                      'max_unit': 512, 'step_size': 1,
                      'allocation_ratio': 1.0}}


def test_several_providers_in_one_transaction(db):
    """Two replacements in one caller transaction: both land, each provider
    moves one generation."""
    with db.writer() as conn:
        first = _provider(conn, 'first')
        second = _provider(conn, 'second')
    with db.writer() as conn:
        assert inventories.set_provider_inventories(
            conn, first, [inventories.Inventory('VCPU', 4)]) == 1
        assert inventories.set_provider_inventories(
            conn, second, [inventories.Inventory('VCPU', 2)]) == 1
    assert _stored(db, first.uuid)[1]['VCPU']['total'] == 4
    assert _stored(db, second.uuid)[1]['VCPU']['total'] == 2


def test_caller_failure_rolls_everything_back(db):
    """An error later in the caller's transaction undoes the replacement."""
    with db.writer() as conn:
        provider = _provider(conn, 'one')
    with pytest.raises(RuntimeError):
        with db.writer() as conn:
            inventories.set_provider_inventories(
                conn, provider, [inventories.Inventory('VCPU', 4)])
            raise RuntimeError('the caller changes its mind')
    assert _stored(db, provider.uuid) == (0, {})


def test_stale_generation_is_a_concurrent_update(db):
    with db.writer() as conn:
        provider = _provider(conn, 'one')
    stale = _at(provider, provider.generation + 5)
    with pytest.raises(inventories.ConcurrentUpdate):
        with db.writer() as conn:
            inventories.set_provider_inventories(
                conn, stale, [inventories.Inventory('VCPU', 4)])
    assert _stored(db, provider.uuid) == (0, {})


def test_dropping_allocated_inventory_is_refused(db):
    with db.writer() as conn:
        provider = _provider(conn, 'one')
        generation = inventories.set_provider_inventories(conn, provider, [
            inventories.Inventory('VCPU', 8),
            inventories.Inventory('DISK_GB', 100),
            inventories.Inventory('MEMORY_MB', 100)])
        _allocate(conn, provider, 'VCPU', 2)
        _allocate(conn, provider, 'DISK_GB', 10)
    with pytest.raises(inventories.InventoryInUse) as caught:
        with db.writer() as conn:
            inventories.set_provider_inventories(
                conn, _at(provider, generation), [])
    assert str(caught.value) == (
        "Inventory for 'VCPU, DISK_GB' on resource provider '%s' in use."
        % provider.uuid)
    assert len(_stored(db, provider.uuid)[1]) == 3


def test_shrinking_below_allocations_is_allowed(db):
    """As in the reference, an update may leave a provider over capacity."""
    with db.writer() as conn:
        provider = _provider(conn, 'one')
        generation = inventories.set_provider_inventories(
            conn, provider, [inventories.Inventory('VCPU', 8)])
        _allocate(conn, provider, 'VCPU', 6)
        inventories.set_provider_inventories(
            conn, _at(provider, generation),
            [inventories.Inventory('VCPU', 2)])
    assert _stored(db, provider.uuid)[1]['VCPU']['total'] == 2


def test_unknown_class_names_the_first_missing(db):
    with db.writer() as conn:
        provider = _provider(conn, 'one')
    with pytest.raises(resource_classes.UnknownResourceClass) as caught:
        with db.writer() as conn:
            inventories.set_provider_inventories(conn, provider, [
                inventories.Inventory('VCPU', 8),
                inventories.Inventory('CUSTOM_MISSING', 1),
                inventories.Inventory('CUSTOM_ALSO_MISSING', 1)])
    assert str(caught.value) == 'No such resource class CUSTOM_MISSING.'
    assert caught.value.name == 'CUSTOM_MISSING'


@pytest.mark.parametrize('total,reserved,ratio,equal_allowed,refused', [
    (10, 9, 1.0, False, False),
    (10, 10, 1.0, False, True),
    (10, 10, 1.0, True, False),
    (10, 11, 1.0, True, True),
    (10, 0, 0.0, True, False),
    (10, 0, -1.0, True, True),
    (10, 9, 0.5, False, True),
])
def test_capacity_rules(total, reserved, ratio, equal_allowed, refused):
    """Capacity is int((total - reserved) * ratio); zero is allowed only from 1.26."""
    inventory = inventories.Inventory('VCPU', total, reserved=reserved,
                                      allocation_ratio=ratio)
    if refused:
        with pytest.raises(inventories.InvalidCapacity):
            inventories.check_capacity([inventory], 'rp', equal_allowed)
    else:
        inventories.check_capacity([inventory], 'rp', equal_allowed)


def test_custom_class_ids_start_at_the_first_custom_id(db):
    first, created = resource_classes.ensure_resource_class(db, 'CUSTOM_A')
    second = resource_classes.create_resource_class(db, 'CUSTOM_B')
    assert created
    assert (first.id, second.id) == (10000, 10001)
    resource_classes.delete_resource_class(db, 'CUSTOM_B')
    third = resource_classes.create_resource_class(db, 'CUSTOM_C')
    assert third.id == 10001


def test_class_lookup_keeps_names_and_order(db):
    with db.reader() as conn:
        ids = resource_classes.ids_by_name(conn, ['DISK_GB', 'VCPU'])
        names = lookups.resource_class_names(conn, ids.values())
    assert ids == {'VCPU': 0, 'DISK_GB': 2}
    assert names == {0: 'VCPU', 2: 'DISK_GB'}
    with db.reader() as conn:
        stored = conn.execute(sa.select(tables.resource_classes.c.id)
                              .where(tables.resource_classes.c.name == 'VCPU')
                              ).scalar()
    assert stored == 0
