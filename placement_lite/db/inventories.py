"""SQL for provider inventories and the allocations that constrain them.

Functions take an open connection (the caller's transaction). Inventory
values travel as dicts of the six inventory fields; resource classes as ids.
Every write takes the provider generation the caller expects and bumps it
first, in the same transaction (see providers.bump_generation_or_raise).
"""

import sqlalchemy as sa

from placement_lite.db import lookups
from placement_lite.db import providers
from placement_lite.db import tables

inv = tables.inventories
alloc = tables.allocations
rc = tables.resource_classes

INVENTORY_FIELDS = ('total', 'reserved', 'min_unit', 'max_unit',
                    'step_size', 'allocation_ratio')


def _with_class_name():
    return (sa.select(rc.c.name.label('resource_class'), inv.c.resource_class_id,
                      *[inv.c[field] for field in INVENTORY_FIELDS],
                      inv.c.created_at, inv.c.updated_at)
            .select_from(inv.join(rc, rc.c.id == inv.c.resource_class_id)))


def inventories_of_provider(conn, provider_id):
    """The provider's inventory rows, with ``resource_class`` names, oldest first."""
    return conn.execute(_with_class_name()
                        .where(inv.c.resource_provider_id == provider_id)
                        .order_by(inv.c.id)).all()


def inventory_of_provider(conn, provider_id, resource_class):
    """The provider's inventory row of the class named ``resource_class``, or None."""
    return conn.execute(_with_class_name()
                        .where(inv.c.resource_provider_id == provider_id,
                               rc.c.name == resource_class)).first()


def classes_with_inventory(conn, provider_id):
    """Ids of the resource classes the provider has inventory of."""
    return set(conn.execute(
        sa.select(inv.c.resource_class_id)
        .where(inv.c.resource_provider_id == provider_id)).scalars())


def classes_with_allocations(conn, provider_id, class_ids):
    """Ids, ascending, of those of ``class_ids`` the provider has allocations of."""
    if not class_ids:
        return []
    return list(conn.execute(
        sa.select(alloc.c.resource_class_id)
        .where(alloc.c.resource_provider_id == provider_id,
               alloc.c.resource_class_id.in_(sorted(class_ids)))
        .group_by(alloc.c.resource_class_id)
        .order_by(alloc.c.resource_class_id)).scalars())


def used_amounts(conn, provider_id, class_ids):
    """{class id: total allocated} for those of ``class_ids`` in use on the provider."""
    if not class_ids:
        return {}
    rows = conn.execute(
        sa.select(alloc.c.resource_class_id, sa.func.sum(alloc.c.used))
        .where(alloc.c.resource_provider_id == provider_id,
               alloc.c.resource_class_id.in_(sorted(class_ids)))
        .group_by(alloc.c.resource_class_id))
    return {class_id: used for class_id, used in rows}


class InventoryInUse(Exception):
    """Inventory to delete is still allocated; nothing was deleted."""

    def __init__(self, class_ids):
        super().__init__(class_ids)
        #: Ids, ascending, of the allocated classes.
        self.class_ids = class_ids


def add_inventory(conn, provider_id, expected_generation, class_id, values):
    """Bump the provider's generation from ``expected_generation`` (raising
    providers.GenerationChanged), then give it inventory of a class it has
    none of; the new generation, or None (rolled back by the caller's
    error) when it has some already."""
    new_generation = providers.bump_generation_or_raise(
        conn, provider_id, expected_generation)
    if class_id in classes_with_inventory(conn, provider_id):
        return None
    _insert(conn, provider_id, {class_id: values})
    return new_generation


def update_inventory(conn, provider_id, expected_generation, class_id,
                     values):
    """Bump the generation (see add_inventory), then overwrite one
    inventory row; the new generation, or None when there is no such
    row."""
    new_generation = providers.bump_generation_or_raise(
        conn, provider_id, expected_generation)
    if not _update(conn, provider_id, {class_id: values}):
        return None
    return new_generation


def delete_inventory(conn, provider_id, expected_generation, class_id):
    """Bump the generation (see add_inventory), then delete the inventory
    of one class; the new generation, or None when there was none. Raises
    InventoryInUse when it is allocated."""
    new_generation = providers.bump_generation_or_raise(
        conn, provider_id, expected_generation)
    if not _delete_unused(conn, provider_id, {class_id}):
        return None
    return new_generation


def replace_inventories(conn, provider_id, expected_generation,
                        values_by_class_id):
    """Bump the generation (see add_inventory), then make
    ``values_by_class_id`` ({class id: field values}) the provider's whole
    inventory; the new generation. Raises InventoryInUse when a class to
    drop is allocated.

    The bump comes before any read: it holds the provider's row, so
    concurrent writers of one provider queue there and then fail their own
    compare-and-bump instead of colliding on inventory rows."""
    new_generation = providers.bump_generation_or_raise(
        conn, provider_id, expected_generation)
    existing = classes_with_inventory(conn, provider_id)
    to_delete = existing - values_by_class_id.keys()
    if to_delete:
        _delete_unused(conn, provider_id, to_delete)
    _insert(conn, provider_id, {
        class_id: values for class_id, values in values_by_class_id.items()
        if class_id not in existing})
    _update(conn, provider_id, {
        class_id: values for class_id, values in values_by_class_id.items()
        if class_id in existing})
    return new_generation


def _insert(conn, provider_id, values_by_class_id):
    if not values_by_class_id:
        return
    now = lookups.utcnow()
    conn.execute(inv.insert(), [
        dict(values, resource_provider_id=provider_id,
             resource_class_id=class_id, created_at=now)
        for class_id, values in values_by_class_id.items()])


def _update(conn, provider_id, values_by_class_id):
    """Overwrite existing rows; False if one was missing."""
    now = lookups.utcnow()
    for class_id, values in values_by_class_id.items():
        result = conn.execute(
            inv.update()
            .where(inv.c.resource_provider_id == provider_id,
                   inv.c.resource_class_id == class_id)
            .values(updated_at=now, **values))
        if result.rowcount != 1:
            return False
    return True


def _delete_unused(conn, provider_id, class_ids):
    """Delete the inventory of ``class_ids``; how many rows went. Raises
    InventoryInUse, deleting nothing, when any of them is allocated."""
    in_use = classes_with_allocations(conn, provider_id, class_ids)
    if in_use:
        raise InventoryInUse(in_use)
    return conn.execute(
        inv.delete()
        .where(inv.c.resource_provider_id == provider_id,
               inv.c.resource_class_id.in_(sorted(class_ids)))).rowcount


def class_has_inventory(conn, class_id):
    """Whether any provider has inventory of the resource class."""
    return conn.execute(
        sa.select(inv.c.id).where(inv.c.resource_class_id == class_id)
        .limit(1)).first() is not None
