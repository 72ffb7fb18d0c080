"""Usage sums: per provider (by its inventory classes) and per project/user
(by consumer type from 1.38)."""

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


def _owned_allocations(project_id, user_id, untyped_only, type_name):
    """FROM and WHERE of the allocations of a project (and user); with
    ``untyped_only`` of consumers without a type, with ``type_name`` of
    consumers of that type."""
    joined = (allocations
              .join(consumers, allocations.c.consumer_id == consumers.c.uuid)
              .join(projects, consumers.c.project_id == projects.c.id)
              .join(resource_classes,
                    allocations.c.resource_class_id == resource_classes.c.id)
              .outerjoin(consumer_types,
                         consumers.c.consumer_type_id == consumer_types.c.id))
    conditions = [projects.c.external_id == project_id]
    if user_id:
        joined = joined.join(users, consumers.c.user_id == users.c.id)
        conditions.append(users.c.external_id == user_id)
    if untyped_only:
        conditions.append(consumers.c.consumer_type_id.is_(None))
    if type_name is not None:
        conditions.append(consumer_types.c.name == type_name)
    return joined, conditions


def of_project(conn, project_id, user_id=None, untyped_only=False,
               type_name=None):
    """[(class name, consumer type name or None, used)] grouped by class and
    consumer type; ``untyped_only`` keeps consumers without a type,
    ``type_name`` those of that type."""
    joined, conditions = _owned_allocations(project_id, user_id,
                                            untyped_only, type_name)
    query = (sa.select(resource_classes.c.name, consumer_types.c.name,
                       sa.func.sum(allocations.c.used))
             .select_from(joined).where(*conditions)
             .group_by(resource_classes.c.name, consumer_types.c.name)
             .order_by(resource_classes.c.name))
    return [(rc, ct, int(used)) for rc, ct, used in conn.execute(query)]


def consumer_counts(conn, project_id, user_id=None, untyped_only=False,
                    type_name=None, by_type=True):
    """{consumer type name or None: distinct consumers} with allocations of
    the project (and user); one entry under None when not ``by_type``."""
    joined, conditions = _owned_allocations(project_id, user_id,
                                            untyped_only, type_name)
    count = sa.func.count(sa.distinct(allocations.c.consumer_id))
    if not by_type:
        return {None: conn.execute(
            sa.select(count).select_from(joined).where(*conditions)).scalar()}
    query = (sa.select(consumer_types.c.name, count)
             .select_from(joined).where(*conditions)
             .group_by(consumer_types.c.name))
    return {name: total for name, total in conn.execute(query)}
