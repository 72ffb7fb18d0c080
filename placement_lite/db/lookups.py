"""Small named queries every resource needs: providers by uuid, generation
bumps, and name-to-id lookups for resource classes and traits.

Each function takes an open connection (inside the caller's transaction) and
returns plain values or ``Row`` objects; none of them knows HTTP.
"""

import datetime

import sqlalchemy as sa

from placement_lite.db import tables

rp = tables.resource_providers
rc = tables.resource_classes
traits = tables.traits


def utcnow():
    """Naive UTC now, as stored in created_at/updated_at."""
    return datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)


def provider_by_uuid(conn, uuid):
    """The provider row (with parent and root uuids) or None."""
    parent = rp.alias('parent')
    root = rp.alias('root')
    query = (
        sa.select(rp, parent.c.uuid.label('parent_provider_uuid'),
                  root.c.uuid.label('root_provider_uuid'))
        .select_from(rp.outerjoin(parent, rp.c.parent_provider_id == parent.c.id)
                     .outerjoin(root, rp.c.root_provider_id == root.c.id))
        .where(rp.c.uuid == uuid))
    return conn.execute(query).first()


def bump_provider_generation(conn, provider_id, expected_generation):
    """Compare-and-increment a provider's generation.

    Returns the new generation, or None when the stored generation is not
    ``expected_generation`` (another writer got there first): the caller
    answers 409 ``placement.concurrent_update`` and its transaction rolls
    back.
    """
    result = conn.execute(
        rp.update()
        .where(rp.c.id == provider_id, rp.c.generation == expected_generation)
        .values(generation=expected_generation + 1, updated_at=utcnow()))
    if result.rowcount != 1:
        return None
    return expected_generation + 1


# Built once: these run on nearly every request.
_CLASS_IDS = sa.select(rc.c.name, rc.c.id).where(
    rc.c.name.in_(sa.bindparam('names', expanding=True)))
_CLASS_NAMES = sa.select(rc.c.id, rc.c.name)
_CLASS_NAMES_OF = _CLASS_NAMES.where(
    rc.c.id.in_(sa.bindparam('ids', expanding=True)))
_TRAIT_IDS = sa.select(traits.c.name, traits.c.id).where(
    traits.c.name.in_(sa.bindparam('names', expanding=True)))


def resource_class_ids(conn, names):
    """{name: id} for the resource classes among ``names`` that exist."""
    if not names:
        return {}
    return dict(conn.execute(_CLASS_IDS,
                             {'names': sorted(set(names))}).all())


def resource_class_names(conn, ids=None):
    """{id: name} for ``ids`` (all classes when None)."""
    if ids is None:
        return dict(conn.execute(_CLASS_NAMES).all())
    return dict(conn.execute(_CLASS_NAMES_OF,
                             {'ids': sorted(set(ids))}).all())


def trait_ids(conn, names):
    """{name: id} for the traits among ``names`` that exist."""
    if not names:
        return {}
    return dict(conn.execute(_TRAIT_IDS,
                             {'names': sorted(set(names))}).all())


def replace_provider_links(conn, link_table, column, provider_id, wanted_ids):
    """Make a provider's rows in ``link_table`` (its traits or aggregates)
    name exactly ``wanted_ids`` in ``column``, touching only what changes."""
    wanted_ids = set(wanted_ids)
    current = set(conn.execute(
        sa.select(column)
        .where(link_table.c.resource_provider_id == provider_id)).scalars())
    stale = current - wanted_ids
    if stale:
        conn.execute(link_table.delete().where(
            link_table.c.resource_provider_id == provider_id,
            column.in_(sorted(stale))))
    added = wanted_ids - current
    if added:
        now = utcnow()
        conn.execute(link_table.insert(), [
            {'resource_provider_id': provider_id, column.name: linked_id,
             'created_at': now}
            for linked_id in sorted(added)])
