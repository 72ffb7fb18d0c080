"""What the cloud holds and uses, for the capacity report and the
capacity gauges of /metrics (see domain.capacity)."""

import collections

import sqlalchemy as sa

from placement_lite.db import tables

rp = tables.resource_providers
inv = tables.inventories
alloc = tables.allocations
rc = tables.resource_classes


def _used_by_class():
    return sa.select(
        alloc.c.resource_class_id.label('rc_id'),
        sa.func.sum(alloc.c.used).label('used')).group_by(
            alloc.c.resource_class_id).subquery()


def _held_by_class():
    return sa.select(
        inv.c.resource_class_id.label('rc_id'),
        sa.func.sum(inv.c.total).label('total'),
        sa.func.sum(inv.c.reserved).label('reserved'),
        sa.func.sum(sa.func.floor(tables.capacity(inv))).label('capacity'),
    ).group_by(inv.c.resource_class_id).subquery()


def _class_totals_query():
    held = _held_by_class()
    used = _used_by_class()
    return sa.select(
        rc.c.name, held.c.total, held.c.reserved, held.c.capacity,
        sa.func.coalesce(used.c.used, 0),
    ).select_from(held.join(rc, rc.c.id == held.c.rc_id).outerjoin(
        used, used.c.rc_id == held.c.rc_id)).order_by(rc.c.id)


_CLASS_TOTALS = _class_totals_query()


def class_totals(conn):
    """[(class name, total, reserved, capacity, used)] of every class some
    provider has an inventory of, in class id order: one statement, the
    sums made by the database. Capacity is ``(total - reserved) *
    allocation_ratio`` of each inventory, rounded down, added up."""
    return [(name, int(total), int(reserved), int(capacity), int(used))
            for name, total, reserved, capacity, used
            in conn.execute(_CLASS_TOTALS)]


class ProviderRows(collections.namedtuple(
        'ProviderRows', 'providers inventories usages aggregates traits')):
    """Every provider as rows: ``providers`` (id, uuid, name, root uuid),
    ``inventories`` (provider id, class name, total, reserved,
    allocation_ratio, min_unit, max_unit, step_size), ``usages``
    (provider id, class name, used), ``aggregates`` (provider id,
    aggregate uuid) and ``traits`` (provider id, trait name)."""


def provider_rows(conn, with_aggregates=False, with_traits=False):
    """ProviderRows of the whole cloud; aggregates and traits only when
    asked for (empty otherwise)."""
    root = rp.alias('root')
    providers = conn.execute(
        sa.select(rp.c.id, rp.c.uuid, rp.c.name, root.c.uuid).join(
            root, root.c.id == rp.c.root_provider_id).order_by(rp.c.id)).all()
    inventories = conn.execute(
        sa.select(inv.c.resource_provider_id, rc.c.name, inv.c.total,
                  inv.c.reserved, inv.c.allocation_ratio, inv.c.min_unit,
                  inv.c.max_unit, inv.c.step_size).join(
            rc, rc.c.id == inv.c.resource_class_id)).all()
    usages = conn.execute(
        sa.select(alloc.c.resource_provider_id, rc.c.name,
                  sa.func.sum(alloc.c.used)).join(
            rc, rc.c.id == alloc.c.resource_class_id).group_by(
            alloc.c.resource_provider_id, rc.c.name)).all()
    aggregates = traits = []
    if with_aggregates:
        links = tables.resource_provider_aggregates
        aggregates = conn.execute(
            sa.select(links.c.resource_provider_id, tables.placement_aggregates
                      .c.uuid).join(
                tables.placement_aggregates,
                tables.placement_aggregates.c.id == links.c.aggregate_id)
        ).all()
    if with_traits:
        links = tables.resource_provider_traits
        traits = conn.execute(
            sa.select(links.c.resource_provider_id, tables.traits.c.name).join(
                tables.traits, tables.traits.c.id == links.c.trait_id)).all()
    return ProviderRows(providers, inventories, usages, aggregates, traits)
