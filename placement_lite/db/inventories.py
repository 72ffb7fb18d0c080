"""SQL for provider inventories and the allocations that constrain them.

Functions take an open connection (the caller's transaction). Inventory
values travel as dicts of the six inventory fields; resource classes as ids.
Every write takes the provider generation the caller expects and bumps it
first, in the same transaction (see providers.bump_generation_or_raise).
"""

import sqlalchemy as sa

from placement_lite.db import bulk
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


# The reads of one provider's inventories, built once: building a statement
# costs a small read a quarter of its time.
_ONE_OF_PROVIDER = _with_class_name().where(
    inv.c.resource_provider_id == sa.bindparam('provider_id'),
    rc.c.name == sa.bindparam('name'))
_OF_PROVIDER_NAMED = lookups.provider_with(
    inv.join(rc, rc.c.id == inv.c.resource_class_id),
    inv.c.resource_provider_id == tables.resource_providers.c.id,
    _with_class_name().selected_columns, [inv.c.id])


def of_provider_named(conn, uuid):
    """(generation, its inventory rows, with ``resource_class`` names,
    oldest first) of the provider ``uuid``, in one statement; None when
    there is none."""
    return lookups.generation_and_rows(conn, _OF_PROVIDER_NAMED, uuid,
                                       'resource_class_id')


def inventories_of_providers(conn, provider_ids):
    """{provider id: its inventory rows, with ``resource_class`` names,
    oldest first}."""
    found = {}
    if provider_ids:
        for row in conn.execute(
                _with_class_name().add_columns(inv.c.resource_provider_id)
                .where(bulk.one_of(conn, inv.c.resource_provider_id,
                                   provider_ids))
                .order_by(inv.c.id)):
            found.setdefault(row.resource_provider_id, []).append(row)
    return found


def inventory_of_provider(conn, provider_id, resource_class):
    """The provider's inventory row of the class named ``resource_class``, or None."""
    return conn.execute(_ONE_OF_PROVIDER, {'provider_id': provider_id,
                                           'name': resource_class}).first()


def classes_with_inventory(conn, provider_id):
    """Ids of the resource classes the provider has inventory of."""
    return set(conn.execute(
        sa.select(inv.c.resource_class_id)
        .where(inv.c.resource_provider_id == provider_id)).scalars())


def classes_with_allocations(conn, provider_id, class_ids):
    """Ids, ascending, of those of ``class_ids`` the provider has allocations of."""
    return allocated_classes(conn, {provider_id: class_ids}).get(
        provider_id, [])


def allocated_classes(conn, class_ids_by_provider):
    """{provider id: ids, ascending, of its classes that have allocations},
    for those of ``class_ids_by_provider`` ({provider id: class ids})."""
    wanted = {(provider_id, class_id)
              for provider_id, class_ids in class_ids_by_provider.items()
              for class_id in class_ids}
    if not wanted:
        return {}
    found = {}
    for provider_id, class_id in conn.execute(
            sa.select(alloc.c.resource_provider_id, alloc.c.resource_class_id)
            .where(bulk.one_of(conn, alloc.c.resource_provider_id,
                               [pair[0] for pair in wanted]),
                   bulk.one_of(conn, alloc.c.resource_class_id,
                               [pair[1] for pair in wanted]))
            .group_by(alloc.c.resource_provider_id,
                      alloc.c.resource_class_id)
            .order_by(alloc.c.resource_class_id)):
        if (provider_id, class_id) in wanted:
            found.setdefault(provider_id, []).append(class_id)
    return found


def used_amounts(conn, provider_ids, class_ids):
    """{(provider id, class id): total allocated} for those in use."""
    if not provider_ids or not class_ids:
        return {}
    rows = conn.execute(
        sa.select(alloc.c.resource_provider_id, alloc.c.resource_class_id,
                  sa.func.sum(alloc.c.used))
        .where(bulk.one_of(conn, alloc.c.resource_provider_id, provider_ids),
               bulk.one_of(conn, alloc.c.resource_class_id, class_ids))
        .group_by(alloc.c.resource_provider_id, alloc.c.resource_class_id))
    return {(provider_id, class_id): used
            for provider_id, class_id, used in rows}


class InventoryInUse(Exception):
    """Inventory to delete is still allocated; nothing was deleted."""

    def __init__(self, class_ids, provider_id=None):
        super().__init__(class_ids)
        #: Ids, ascending, of the allocated classes.
        self.class_ids = class_ids
        #: The provider they are allocated on.
        self.provider_id = provider_id


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
    if not _update(conn, provider_id, class_id, values):
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


def replace_inventories(conn, expected, wanted):
    """Bump the generations of providers, then make their inventories
    those wanted: ``expected`` is {provider id: the generation the caller
    expects}, ``wanted`` {provider id: {class id: field values}}. Raises
    providers.GenerationChanged when a generation moved, and
    InventoryInUse for the first provider of ``wanted`` (in its order)
    that would lose the inventory of a class it has allocations of.

    The bumps come before any read: they hold the providers' rows, so
    concurrent writers of one provider queue there and then fail their
    own compare-and-bump instead of colliding on inventory rows."""
    if not providers.bump_generations(conn, expected):
        raise providers.GenerationChanged()
    existing = {provider_id: {} for provider_id in wanted}
    for row_id, provider_id, class_id in conn.execute(
            sa.select(inv.c.id, inv.c.resource_provider_id,
                      inv.c.resource_class_id)
            .where(bulk.one_of(conn, inv.c.resource_provider_id, wanted))):
        existing[provider_id][class_id] = row_id
    dropped = {provider_id: [class_id for class_id in existing[provider_id]
                             if class_id not in values_by_class_id]
               for provider_id, values_by_class_id in wanted.items()}
    in_use = allocated_classes(conn, dropped)
    for provider_id in wanted:
        if provider_id in in_use:
            raise InventoryInUse(in_use[provider_id], provider_id)
    if any(dropped.values()):
        conn.execute(inv.delete().where(bulk.one_of(conn, inv.c.id, [
            existing[provider_id][class_id]
            for provider_id, class_ids in dropped.items()
            for class_id in class_ids])))
    now = lookups.utcnow()
    bulk.insert(conn, inv, [
        dict(values, resource_provider_id=provider_id,
             resource_class_id=class_id)
        for provider_id, values_by_class_id in wanted.items()
        for class_id, values in values_by_class_id.items()
        if class_id not in existing[provider_id]], created_at=now)
    bulk.update(conn, inv, [
        dict(values, resource_provider_id=provider_id,
             resource_class_id=class_id)
        for provider_id, values_by_class_id in wanted.items()
        for class_id, values in values_by_class_id.items()
        if class_id in existing[provider_id]],
        ('resource_provider_id', 'resource_class_id'), updated_at=now)


def _insert(conn, provider_id, values_by_class_id):
    bulk.insert(conn, inv, [
        dict(values, resource_class_id=class_id)
        for class_id, values in values_by_class_id.items()],
        resource_provider_id=provider_id, created_at=lookups.utcnow())


def _update(conn, provider_id, class_id, values):
    """Overwrite one existing row; False if it was missing."""
    return conn.execute(
        inv.update()
        .where(inv.c.resource_provider_id == provider_id,
               inv.c.resource_class_id == class_id)
        .values(updated_at=lookups.utcnow(), **values)).rowcount == 1


def _delete_unused(conn, provider_id, class_ids):
    """Delete the inventory of ``class_ids``; how many rows went. Raises
    InventoryInUse, deleting nothing, when any of them is allocated."""
    in_use = classes_with_allocations(conn, provider_id, class_ids)
    if in_use:
        raise InventoryInUse(in_use)
    return conn.execute(
        inv.delete()
        .where(inv.c.resource_provider_id == provider_id,
               bulk.one_of(conn, inv.c.resource_class_id, class_ids))).rowcount


def class_has_inventory(conn, class_id):
    """Whether any provider has inventory of the resource class."""
    return conn.execute(
        sa.select(inv.c.id).where(inv.c.resource_class_id == class_id)
        .limit(1)).first() is not None
