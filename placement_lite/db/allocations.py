"""Allocations: who consumes how much of which class on which provider.

``allocations.consumer_id`` holds the consumer's uuid (as in the reference
schema); reads join consumers on it.
"""

import functools

import sqlalchemy as sa

from placement_lite.db import bulk
from placement_lite.db import locks
from placement_lite.db import lookups
from placement_lite.db import tables

allocations = tables.allocations
consumers = tables.consumers
inventories = tables.inventories
providers = tables.resource_providers
resource_classes = tables.resource_classes


def providers_named(conn, uuids, lock=False):
    """{uuid: row (id, uuid, generation)} for the providers among ``uuids``.

    With ``lock`` the rows are locked all at once or not at all
    (locks.Busy: see db.locks for why a write never waits for them).
    While the locks are held nobody else can change these providers'
    generations, inventories or allocations in a way that adds usage
    (every such write bumps the generation), so a capacity check made now
    stays true until commit.
    """
    if not uuids:
        return {}
    query = _providers_named(conn.dialect.name, lock)
    params = {'uuids': bulk.bound(conn, uuids)}
    rows = (locks.lock_at_once(conn, query, providers.c.uuid, uuids, params)
            if lock else conn.execute(query, params))
    return {row.uuid: row for row in rows}


@functools.cache
def _providers_named(dialect, lock):
    query = bulk.where_one_of_bound(
        dialect, sa.select(providers.c.id, providers.c.uuid,
                           providers.c.generation),
        providers.c.uuid, 'uuids').order_by(providers.c.id)
    return locks.locking(query, providers.c.uuid) if lock else query


def usage_by_provider_and_class(conn, provider_ids, class_ids):
    """{(provider_id, class_id): total used} for those providers and classes."""
    if not provider_ids or not class_ids:
        return {}
    rows = conn.execute(_usage_by_provider_and_class(conn.dialect.name),
                        _of_providers_and_classes(conn, provider_ids,
                                                  class_ids))
    return {(rp_id, rc_id): int(used) for rp_id, rc_id, used in rows}


def _of_providers_and_classes(conn, provider_ids, class_ids):
    return {'provider_ids': bulk.bound(conn, provider_ids),
            'class_ids': bulk.bound(conn, class_ids)}


@functools.cache
def _usage_by_provider_and_class(dialect):
    return (sa.select(allocations.c.resource_provider_id,
                      allocations.c.resource_class_id,
                      sa.func.sum(allocations.c.used))
            .where(bulk.one_of_bound(dialect,
                                     allocations.c.resource_provider_id,
                                     'provider_ids'),
                   bulk.one_of_bound(dialect, allocations.c.resource_class_id,
                                     'class_ids'))
            .group_by(allocations.c.resource_provider_id,
                      allocations.c.resource_class_id))


def inventories_in_use(conn, provider_ids, class_ids):
    """{(provider_id, class_id): inventory row} for those providers and
    classes, each row with ``in_use``, the total allocated of it, read in
    the same statement."""
    if not provider_ids or not class_ids:
        return {}
    rows = conn.execute(_inventories_in_use(conn.dialect.name),
                        _of_providers_and_classes(conn, provider_ids,
                                                  class_ids))
    return {(row.resource_provider_id, row.resource_class_id): row
            for row in rows}


@functools.cache
def _inventories_in_use(dialect):
    in_use = (sa.select(sa.func.coalesce(sa.func.sum(allocations.c.used), 0))
              .where(allocations.c.resource_provider_id
                     == inventories.c.resource_provider_id,
                     allocations.c.resource_class_id
                     == inventories.c.resource_class_id)
              .scalar_subquery())
    return (sa.select(inventories, in_use.label('in_use'))
            .where(bulk.one_of_bound(dialect,
                                     inventories.c.resource_provider_id,
                                     'provider_ids'),
                   bulk.one_of_bound(dialect, inventories.c.resource_class_id,
                                     'class_ids')))


def delete_for_consumers(conn, consumer_uuids):
    """Remove every allocation of the given consumers."""
    if consumer_uuids:
        conn.execute(_delete_for_consumers(conn.dialect.name),
                     {'consumer_uuids': bulk.bound(conn, consumer_uuids)})


@functools.cache
def _delete_for_consumers(dialect):
    return allocations.delete().where(bulk.one_of_bound(
        dialect, allocations.c.consumer_id, 'consumer_uuids'))


def insert(conn, rows):
    """Insert allocations: dicts of provider_id, class_id, consumer_uuid, used."""
    bulk.insert(conn, allocations, [
        {'resource_provider_id': row['provider_id'],
         'resource_class_id': row['class_id'],
         'consumer_id': row['consumer_uuid'],
         'used': row['used']}
        for row in rows], created_at=lookups.utcnow())


def of_consumers(conn, consumer_uuids):
    """Allocation rows of some consumers, with their provider's uuid,
    generation and the class name, in a stable order."""
    if not consumer_uuids:
        return []
    query = (sa.select(allocations.c.consumer_id.label('consumer_uuid'),
                       allocations.c.resource_provider_id.label('provider_id'),
                       providers.c.uuid.label('provider_uuid'),
                       providers.c.generation.label('provider_generation'),
                       allocations.c.resource_class_id.label('class_id'),
                       resource_classes.c.name.label('resource_class'),
                       allocations.c.used,
                       allocations.c.created_at,
                       allocations.c.updated_at)
             .select_from(
                 allocations
                 .join(providers,
                       allocations.c.resource_provider_id == providers.c.id)
                 .join(resource_classes,
                       allocations.c.resource_class_id == resource_classes.c.id))
             .where(bulk.one_of(conn, allocations.c.consumer_id,
                                consumer_uuids))
             .order_by(allocations.c.id))
    return conn.execute(query).all()


_ON_PROVIDER_NAMED = lookups.provider_with(
    allocations
    .join(consumers, allocations.c.consumer_id == consumers.c.uuid)
    .join(resource_classes,
          allocations.c.resource_class_id == resource_classes.c.id),
    allocations.c.resource_provider_id == providers.c.id,
    [allocations.c.consumer_id.label('consumer_uuid'),
     consumers.c.generation.label('consumer_generation'),
     resource_classes.c.name.label('resource_class'),
     allocations.c.used, allocations.c.created_at, allocations.c.updated_at],
    [allocations.c.id])


def on_provider_named(conn, uuid):
    """(generation, the allocation rows on it, with the consumer's
    generation) of the provider ``uuid``, in one statement; None when
    there is none. Allocations without a consumer record are left out, as
    by the reference."""
    return lookups.generation_and_rows(conn, _ON_PROVIDER_NAMED, uuid,
                                       'consumer_uuid')
