"""SQL for placement aggregates and providers' membership in them."""

import functools

import sqlalchemy as sa

from placement_lite.db import bulk
from placement_lite.db import lookups
from placement_lite.db import prepared
from placement_lite.db import providers
from placement_lite.db import tables

aggregates = tables.placement_aggregates
links = tables.resource_provider_aggregates
resource_providers = tables.resource_providers


_OF_PROVIDER_NAMED = lookups.provider_with(
    links.join(aggregates, aggregates.c.id == links.c.aggregate_id),
    links.c.resource_provider_id == resource_providers.c.id,
    [aggregates.c.uuid.label('aggregate_uuid')], [aggregates.c.id])


def of_provider_named(conn, uuid):
    """(generation, the uuids of its aggregates, oldest aggregate first)
    of the provider ``uuid``, in one statement; None when there is none."""
    found = lookups.generation_and_rows(conn, _OF_PROVIDER_NAMED, uuid,
                                        'aggregate_uuid')
    if found is None:
        return None
    generation, rows = found
    return generation, [row.aggregate_uuid for row in rows]


_ROOT_MEMBERSHIPS = (
    sa.select(resource_providers.c.id, aggregates.c.uuid)
    .select_from(resource_providers
                 .join(links, links.c.resource_provider_id
                       == resource_providers.c.root_provider_id)
                 .join(aggregates, aggregates.c.id == links.c.aggregate_id)))


def aggregates_of_roots(conn, provider_ids):
    """{provider id: frozenset of the uuids of the aggregates its root
    provider is a member of}, for each of ``provider_ids`` (an empty set
    for a provider whose root is in none, or that does not exist). A
    root's own membership, as GET /resource_providers/{uuid}/aggregates
    shows it: what the rest of its tree is a member of does not count."""
    found = {provider_id: set() for provider_id in provider_ids}
    if found:
        for provider_id, uuid in conn.execute(_ROOT_MEMBERSHIPS.where(
                bulk.one_of(conn, resource_providers.c.id, list(found)))):
            found[provider_id].add(uuid)
    return {provider_id: frozenset(uuids)
            for provider_id, uuids in found.items()}


def aggregate_ids(conn, uuids):
    """{uuid: id} for the aggregates among ``uuids`` that exist."""
    if not uuids:
        return {}
    return dict(prepared.read(conn, _aggregate_ids(conn.dialect.name),
                              {'uuids': bulk.bound(conn, uuids)}))


@functools.cache
def _aggregate_ids(dialect):
    return bulk.where_one_of_bound(
        dialect, sa.select(aggregates.c.uuid, aggregates.c.id),
        aggregates.c.uuid, 'uuids')


def ensure_aggregates(conn, uuids):
    """{uuid: id} for ``uuids``, creating the aggregates not seen before.

    Concurrent creators of the same aggregate do not fail: the insert
    ignores a uuid another transaction has just added.
    """
    missing = set(uuids) - set(aggregate_ids(conn, uuids))
    bulk.insert(conn, aggregates, [{'uuid': uuid} for uuid in sorted(missing)],
                ignoring_duplicates=True, created_at=lookups.utcnow())
    return aggregate_ids(conn, uuids)


def set_provider_aggregates(conn, provider_id, expected_generation,
                            aggregate_uuids):
    """Make the provider a member of exactly ``aggregate_uuids`` (creating
    the aggregates not seen before); the new generation, or None when it
    was not bumped.

    With ``expected_generation`` the generation is bumped from it (raising
    providers.GenerationChanged when it moved), even when the membership
    does not change. With None (before microversion 1.19) it is left
    alone, as the reference leaves it, and the provider's row is only
    locked: nothing kept between requests depends on membership (the
    candidates engine reads it per request), so no cache goes stale.
    Either way the provider is held first, so a concurrent writer of the
    same provider waits for this transaction instead of colliding on the
    membership rows.
    """
    if expected_generation is None:
        providers.lock_provider(conn, provider_id)
        new_generation = None
    else:
        new_generation = providers.bump_generation_or_raise(
            conn, provider_id, expected_generation)
    ids = ensure_aggregates(conn, aggregate_uuids)
    providers.replace_links(conn, links, links.c.aggregate_id, provider_id,
                            ids.values())
    return new_generation
