"""SQL for provider inventories and the allocations that constrain them.

Functions take an open connection (the caller's transaction). Inventory
values travel as dicts of the six inventory fields; resource classes as ids.
"""

import sqlalchemy as sa

from placement_lite.db import lookups
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


def insert_inventories(conn, provider_id, values_by_class_id):
    """Create inventory rows: ``values_by_class_id`` maps class id to field values."""
    if not values_by_class_id:
        return
    now = lookups.utcnow()
    conn.execute(inv.insert(), [
        dict(values, resource_provider_id=provider_id,
             resource_class_id=class_id, created_at=now)
        for class_id, values in values_by_class_id.items()])


def update_inventory(conn, provider_id, class_id, values):
    """Overwrite one inventory row; returns whether it existed."""
    result = conn.execute(
        inv.update()
        .where(inv.c.resource_provider_id == provider_id,
               inv.c.resource_class_id == class_id)
        .values(updated_at=lookups.utcnow(), **values))
    return result.rowcount == 1


def delete_inventories(conn, provider_id, class_ids):
    """Delete the provider's inventory of ``class_ids``; returns how many rows went."""
    if not class_ids:
        return 0
    return conn.execute(
        inv.delete()
        .where(inv.c.resource_provider_id == provider_id,
               inv.c.resource_class_id.in_(sorted(class_ids)))).rowcount


def class_has_inventory(conn, class_id):
    """Whether any provider has inventory of the resource class."""
    return conn.execute(
        sa.select(inv.c.id).where(inv.c.resource_class_id == class_id)
        .limit(1)).first() is not None
