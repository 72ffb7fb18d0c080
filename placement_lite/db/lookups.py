"""Small named queries every resource needs: providers by uuid and
name-to-id lookups for resource classes and traits. Nothing here writes.

Each function takes an open connection (inside the caller's transaction) and
returns plain values or ``Row`` objects; none of them knows HTTP.
"""

import datetime
import functools

import sqlalchemy as sa

from placement_lite.db import bulk
from placement_lite.db import prepared
from placement_lite.db import tables

rp = tables.resource_providers
rc = tables.resource_classes
traits = tables.traits


def utcnow():
    """Naive UTC now, as stored in created_at/updated_at."""
    return datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)


def _provider_by_uuid():
    parent = rp.alias('parent')
    root = rp.alias('root')
    return (
        sa.select(rp, parent.c.uuid.label('parent_provider_uuid'),
                  root.c.uuid.label('root_provider_uuid'))
        .select_from(rp.outerjoin(parent, rp.c.parent_provider_id == parent.c.id)
                     .outerjoin(root, rp.c.root_provider_id == root.c.id))
        .where(rp.c.uuid == sa.bindparam('uuid')))


#: Built once: nearly every request naming a provider runs it, and building
#: it costs more than running it.
_PROVIDER_BY_UUID = _provider_by_uuid()


def provider_by_uuid(conn, uuid):
    """The provider row (with parent and root uuids) or None."""
    return conn.execute(_PROVIDER_BY_UUID, {'uuid': uuid}).first()


def provider_with(joined, onclause, columns, order_by):
    """A statement reading, in one round trip, the generation of the
    provider ``:uuid`` and ``columns`` of its rows in ``joined`` (where
    ``onclause`` links them to it), in ``order_by`` order: no row when
    there is no such provider, one whose ``columns`` are all NULL when it
    has none of those rows. Read it with :func:`generation_and_rows`."""
    return (sa.select(rp.c.generation.label('provider_generation'),
                      *columns)
            .select_from(rp.outerjoin(joined, onclause))
            .where(rp.c.uuid == sa.bindparam('uuid'))
            .order_by(*order_by))


def generation_and_rows(conn, statement, uuid, present):
    """What ``statement`` (made by :func:`provider_with`) reads of the
    provider ``uuid``: (its generation, its rows: those whose column
    ``present`` is not NULL), or None when there is no such provider.
    Prepared on PostgreSQL (db.prepared): most requests of a region are
    one of these."""
    rows = prepared.read(conn, statement, {'uuid': uuid})
    if not rows:
        return None
    return rows[0].provider_generation, [
        row for row in rows if getattr(row, present) is not None]


def resource_class_ids(conn, names):
    """{name: id} for the resource classes among ``names`` that exist."""
    if not names:
        return {}
    return dict(conn.execute(_resource_class_ids(conn.dialect.name),
                             {'names': bulk.bound(conn, names)}).all())


@functools.cache
def _resource_class_ids(dialect):
    return bulk.where_one_of_bound(dialect, sa.select(rc.c.name, rc.c.id),
                                   rc.c.name, 'names')


def resource_class_names(conn, ids=None):
    """{id: name} for ``ids`` (all classes when None)."""
    query = sa.select(rc.c.id, rc.c.name)
    if ids is not None:
        query = query.where(bulk.one_of(conn, rc.c.id, ids))
    return dict(conn.execute(query).all())


def trait_ids(conn, names):
    """{name: id} for the traits among ``names`` that exist."""
    if not names:
        return {}
    return dict(prepared.read(conn, _trait_ids(conn.dialect.name),
                              {'names': bulk.bound(conn, names)}))


@functools.cache
def _trait_ids(dialect):
    return bulk.where_one_of_bound(dialect, sa.select(traits.c.name,
                                                      traits.c.id),
                                   traits.c.name, 'names')
