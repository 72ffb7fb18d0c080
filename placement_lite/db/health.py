"""Counts of rows an upgrade or a past bug can leave inconsistent, for
``placement-lite status`` (each takes an open connection)."""

import sqlalchemy as sa

from placement_lite.db import tables

rp = tables.resource_providers
consumers = tables.consumers
allocations = tables.allocations


def providers_without_root(conn):
    """Providers with no root recorded (written before microversion 1.28's
    schema, never migrated)."""
    return conn.execute(
        sa.select(sa.func.count()).select_from(rp)
        .where(rp.c.root_provider_id.is_(None))).scalar()


def consumers_missing_for_allocations(conn):
    """Distinct consumer uuids that hold allocations but have no consumer
    row (no project, user or generation)."""
    return conn.execute(
        sa.select(sa.func.count(sa.distinct(allocations.c.consumer_id)))
        .select_from(allocations.outerjoin(
            consumers, allocations.c.consumer_id == consumers.c.uuid))
        .where(consumers.c.id.is_(None))).scalar()


def consumers_without_allocations(conn):
    """Consumer rows that hold no allocation: the API deletes a consumer
    with its last allocation, so these were left by something else."""
    return conn.execute(
        sa.select(sa.func.count()).select_from(consumers)
        .where(~sa.exists().where(
            allocations.c.consumer_id == consumers.c.uuid))).scalar()
