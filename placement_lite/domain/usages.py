"""Usages: what a provider has handed out, what a project (or user) holds.

Project usages are read from the replica when there is one, and lag the
primary by the replication delay; a provider's usages, which come with its
generation, are read from the primary.

From microversion 1.38 project usages are grouped by consumer type, each
group carrying ``consumer_count``; the ``consumer_type`` filter takes a type
name, ``all`` (one group of everything) or ``unknown`` (consumers without a
type, one group).
"""

from placement_lite.db import usages as usages_db
from placement_lite.domain import providers

ALL = 'all'
UNKNOWN = 'unknown'


def provider_usages(ctx, uuid):
    """(provider generation, {class: used}); 404 for an unknown provider."""
    with ctx.db.reader() as conn:
        provider = providers.provider_or_404(
            conn, uuid, 'No resource provider with uuid %s found: No '
            'resource provider with uuid %s found' % (uuid, uuid))
        return provider.generation, usages_db.of_provider(conn, provider.id)


def project_usages(ctx, project_id, user_id=None):
    """{class: used} over the project's (and user's) consumers."""
    with ctx.db.replica_reader() as conn:
        return usages_db.of_project(conn, project_id, user_id)


def project_usages_by_type(ctx, project_id, user_id=None, consumer_type=None):
    """{consumer type: {class: used, ..., 'consumer_count': n}}."""
    with ctx.db.replica_reader() as conn:
        if consumer_type in (ALL, UNKNOWN):
            untyped_only = consumer_type == UNKNOWN
            group = usages_db.of_project(conn, project_id, user_id,
                                         untyped_only=untyped_only)
            if not group:
                return {}
            group['consumer_count'] = usages_db.consumer_counts(
                conn, project_id, user_id, untyped_only=untyped_only,
                by_type=False)[None]
            return {consumer_type: group}
        rows = usages_db.of_project_by_type(conn, project_id, user_id,
                                            type_name=consumer_type)
        counts = usages_db.consumer_counts(conn, project_id, user_id,
                                           type_name=consumer_type)
    result = {}
    for resource_class, type_name, used in rows:
        group = result.setdefault(type_name or UNKNOWN, {})
        group[resource_class] = used
        group['consumer_count'] = counts[type_name]
    return result
