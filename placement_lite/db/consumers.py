"""Consumers and the rows they refer to: projects, users, consumer types.

A consumer row exists while the consumer holds allocations (and, as in the
reference, after an allocation write that named it without giving it any).
"""

import functools

import sqlalchemy as sa

from placement_lite.db import api as db_api
from placement_lite.db import bulk
from placement_lite.db import locks
from placement_lite.db import lookups
from placement_lite.db import tables

consumers = tables.consumers
projects = tables.projects
users = tables.users
consumer_types = tables.consumer_types
allocations = tables.allocations


def _insert_ignoring_duplicates(conn, table, column, values):
    """Insert ``{column: value}`` rows, skipping values already present.

    Safe against concurrent inserts of the same value: the loser's insert
    does nothing instead of failing.
    """
    insert = db_api.insert_ignoring(conn, table, index_elements=[column])
    now = lookups.utcnow()
    conn.execute(insert, [{column: value, 'created_at': now}
                          for value in sorted(values)])


def _ids_by(conn, table, column, values):
    rows = conn.execute(bulk.where_one_of(
        conn, sa.select(table.c[column], table.c.id), table.c[column],
        values))
    return {value: id_ for value, id_ in rows}


#: The tables of a consumer's owners, and the column naming each row.
_OWNERS = ((projects, 'external_id'), (users, 'external_id'),
           (consumer_types, 'name'))


def owner_ids(conn, project_external_ids, user_external_ids, type_names):
    """({external_id: id} of those projects, {external_id: id} of those
    users, {name: id} of those consumer types), the missing ones created.
    Those that exist are found in one statement: every allocation write
    asks."""
    wanted = [set(project_external_ids), set(user_external_ids),
              set(type_names)]
    found = [{}, {}, {}]
    kinds = tuple(kind for kind, values in enumerate(wanted) if values)
    if kinds:
        for kind, value, id_ in conn.execute(
                _owner_ids(conn.dialect.name, kinds),
                {'names_%d' % kind: bulk.bound(conn, wanted[kind])
                 for kind in kinds}):
            found[kind][value] = id_
    for (table, column), values, ids in zip(_OWNERS, wanted, found):
        missing = values - set(ids)
        if missing:
            _insert_ignoring_duplicates(conn, table, column, missing)
            ids.update(_ids_by(conn, table, column, missing))
    return tuple(found)


@functools.cache
def _owner_ids(dialect, kinds):
    """Query: (kind, name, id) of the owners of each of ``kinds`` (indexes
    into _OWNERS) named by the parameter ``names_<kind>``."""
    return sa.union_all(*(
        bulk.where_one_of_bound(dialect, sa.select(
            sa.literal_column(str(kind)), table.c[column], table.c.id),
            table.c[column], 'names_%d' % kind)
        for kind, (table, column) in enumerate(_OWNERS) if kind in kinds))


def _consumer_query():
    return (
        sa.select(consumers.c.id, consumers.c.uuid, consumers.c.generation,
                  consumers.c.project_id, consumers.c.user_id,
                  consumers.c.consumer_type_id,
                  projects.c.external_id.label('project_external_id'),
                  users.c.external_id.label('user_external_id'),
                  consumer_types.c.name.label('consumer_type'))
        .select_from(
            consumers.join(projects, consumers.c.project_id == projects.c.id)
            .join(users, consumers.c.user_id == users.c.id)
            .outerjoin(consumer_types,
                       consumers.c.consumer_type_id == consumer_types.c.id)))


def consumers_by_uuid(conn, uuids, lock=False):
    """{uuid: consumer row} for the consumers among ``uuids`` that exist.

    With ``lock`` the consumer rows are locked until the transaction ends,
    all at once or not at all (locks.Busy), so that one writer at a time
    replaces a consumer's allocations.
    """
    if not uuids:
        return {}
    query = _consumers_by_uuid(conn.dialect.name, lock)
    params = {'uuids': bulk.bound(conn, uuids)}
    if lock:
        return {row.uuid: row for row in locks.lock_at_once(
            conn, query, consumers.c.uuid, uuids, params)}
    return {row.uuid: row for row in conn.execute(query, params)}


@functools.cache
def _consumers_by_uuid(dialect, lock):
    query = bulk.where_one_of_bound(dialect, _consumer_query(),
                                    consumers.c.uuid, 'uuids').order_by(
                                        consumers.c.uuid)
    return locks.locking(query, consumers.c.uuid) if lock else query


def create_consumers(conn, rows):
    """Insert consumers at generation 0, in one statement: ``rows`` are
    (uuid, project id, user id, consumer type id). Returns {uuid: id}.

    Raises api.Retry when another write created one of them since the
    caller found it missing: the next attempt finds it."""
    if not rows:
        return {}
    try:
        created = bulk.insert(conn, consumers, [
            {'uuid': uuid, 'project_id': project_id, 'user_id': user_id,
             'consumer_type_id': type_id}
            for uuid, project_id, user_id, type_id in rows],
            returning=(consumers.c.uuid, consumers.c.id),
            generation=0, created_at=lookups.utcnow())
    except sa.exc.IntegrityError as exc:
        raise db_api.Retry('a consumer was created concurrently') from exc
    if created is not None:
        return dict(created)
    return dict(conn.execute(bulk.where_one_of(
        conn, sa.select(consumers.c.uuid, consumers.c.id), consumers.c.uuid,
        [row[0] for row in rows])).all())


def update_consumer_owners(conn, owners):
    """Change who owns consumers (and their types); generations are kept.
    ``owners``: (consumer id, project id, user id, consumer type id)."""
    bulk.update(conn, consumers, [
        {'id': consumer_id, 'project_id': project_id, 'user_id': user_id,
         'consumer_type_id': type_id}
        for consumer_id, project_id, user_id, type_id in owners],
        ('id',), updated_at=lookups.utcnow())


def bump_consumer_generations(conn, expected):
    """Compare-and-increment the generations of consumers ({id: expected
    generation}); False when another writer changed one first."""
    return bulk.compare_and_bump(conn, consumers, expected,
                                 updated_at=lookups.utcnow())


def delete_consumers_without_allocations(conn, uuids):
    """Remove the consumers among ``uuids`` that hold no allocation."""
    if not uuids:
        return
    holding = sa.select(allocations.c.consumer_id).where(
        allocations.c.consumer_id == consumers.c.uuid)
    conn.execute(consumers.delete().where(
        bulk.one_of(conn, consumers.c.uuid, uuids), ~holding.exists()))
