"""Usage sums: per provider (by its inventory classes) and per project/user
(by consumer type from 1.38)."""

import functools

import sqlalchemy as sa

from placement_lite.db import tables

allocations = tables.allocations
consumers = tables.consumers
consumer_types = tables.consumer_types
inventories = tables.inventories
projects = tables.projects
resource_classes = tables.resource_classes
users = tables.users


def _of_provider():
    provider_id = sa.bindparam('provider_id')
    used = (sa.select(sa.func.coalesce(sa.func.sum(allocations.c.used), 0))
            .where(allocations.c.resource_provider_id == provider_id,
                   allocations.c.resource_class_id
                   == inventories.c.resource_class_id)
            .scalar_subquery())
    return (sa.select(resource_classes.c.name, used)
            .select_from(inventories.join(
                resource_classes,
                inventories.c.resource_class_id == resource_classes.c.id))
            .where(inventories.c.resource_provider_id == provider_id)
            .order_by(inventories.c.resource_class_id))


#: Built once: building it costs more than running it.
_OF_PROVIDER = _of_provider()


def of_provider(conn, provider_id):
    """{class name: used} for every class the provider has inventory of
    (0 when nothing is allocated)."""
    return {name: int(total) for name, total
            in conn.execute(_OF_PROVIDER, {'provider_id': provider_id})}


def _owned(user, untyped_only, typed):
    """Conditions on consumers: those of the project ``:project_id``, of
    the user ``:user_id`` too with ``user``, without a type with
    ``untyped_only``, of the type named ``:type_name`` with ``typed``.
    (External ids and names are looked up in scalar subqueries: an
    unknown one matches no consumer.)"""
    conditions = [consumers.c.project_id == sa.select(projects.c.id).where(
        projects.c.external_id == sa.bindparam('project_id'))
        .scalar_subquery()]
    if user:
        conditions.append(consumers.c.user_id == sa.select(users.c.id).where(
            users.c.external_id == sa.bindparam('user_id')).scalar_subquery())
    if untyped_only:
        conditions.append(consumers.c.consumer_type_id.is_(None))
    if typed:
        conditions.append(consumers.c.consumer_type_id == sa.select(
            consumer_types.c.id).where(
                consumer_types.c.name == sa.bindparam('type_name'))
            .scalar_subquery())
    return conditions


def _named(sums):
    """(class name, [consumer type name,] used) of the ``sums`` subquery
    by resource class id (and consumer type id), by class name: names are
    joined once the allocations are summed, to a row per class."""
    columns = [resource_classes.c.name]
    joined = sums.join(resource_classes,
                       resource_classes.c.id == sums.c.resource_class_id)
    if 'consumer_type_id' in sums.c:
        columns.append(consumer_types.c.name.label('consumer_type'))
        joined = joined.outerjoin(
            consumer_types, consumer_types.c.id == sums.c.consumer_type_id)
    return (sa.select(*columns, sums.c.used).select_from(joined)
            .order_by(resource_classes.c.name))


@functools.cache
def _class_sums(user, untyped_only, typed):
    owned = sa.select(consumers.c.uuid).where(
        *_owned(user, untyped_only, typed))
    return _named(
        sa.select(allocations.c.resource_class_id,
                  sa.func.sum(allocations.c.used).label('used'))
        .where(allocations.c.consumer_id.in_(owned))
        .group_by(allocations.c.resource_class_id).subquery('sums'))


@functools.cache
def _sums_by_type(user, typed):
    return _named(
        sa.select(allocations.c.resource_class_id,
                  consumers.c.consumer_type_id,
                  sa.func.sum(allocations.c.used).label('used'))
        .join_from(allocations, consumers,
                   allocations.c.consumer_id == consumers.c.uuid)
        .where(*_owned(user, False, typed))
        .group_by(allocations.c.resource_class_id,
                  consumers.c.consumer_type_id).subquery('sums'))


def _params(project_id, user_id, type_name):
    return {'project_id': project_id, 'user_id': user_id,
            'type_name': type_name}


def of_project(conn, project_id, user_id=None, untyped_only=False,
               type_name=None):
    """{class name: used} over the allocations of the project's (and
    user's) consumers; ``untyped_only`` keeps consumers without a type,
    ``type_name`` those of that type."""
    query = _class_sums(bool(user_id), untyped_only, type_name is not None)
    return {name: int(used) for name, used in conn.execute(
        query, _params(project_id, user_id, type_name))}


def of_project_by_type(conn, project_id, user_id=None, type_name=None):
    """[(class name, consumer type name or None, used)] over the
    allocations of the project's (and user's) consumers (of the type
    ``type_name`` only, when given), by class name."""
    query = _sums_by_type(bool(user_id), type_name is not None)
    return [(name, type_, int(used)) for name, type_, used in conn.execute(
        query, _params(project_id, user_id, type_name))]


@functools.cache
def _consumer_counts(user, untyped_only, typed, by_type):
    holding = sa.exists().where(allocations.c.consumer_id == consumers.c.uuid)
    conditions = [*_owned(user, untyped_only, typed), holding]
    count = sa.func.count()
    if not by_type:
        return sa.select(count).where(*conditions)
    return (sa.select(consumer_types.c.name, count)
            .select_from(consumers.outerjoin(
                consumer_types,
                consumers.c.consumer_type_id == consumer_types.c.id))
            .where(*conditions)
            .group_by(consumer_types.c.name))


def consumer_counts(conn, project_id, user_id=None, untyped_only=False,
                    type_name=None, by_type=True):
    """{consumer type name or None: consumers with allocations} of the
    project (and user); one entry under None when not ``by_type``."""
    query = _consumer_counts(bool(user_id), untyped_only,
                             type_name is not None, by_type)
    found = conn.execute(query, _params(project_id, user_id, type_name))
    if not by_type:
        return {None: found.scalar()}
    return {name: total for name, total in found}
