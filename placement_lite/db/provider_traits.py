"""SQL for the traits a resource provider has."""

import sqlalchemy as sa

from placement_lite.db import bulk
from placement_lite.db import lookups
from placement_lite.db import providers
from placement_lite.db import tables

traits = tables.traits
links = tables.resource_provider_traits


_OF_PROVIDER_NAMED = lookups.provider_with(
    links.join(traits, traits.c.id == links.c.trait_id),
    links.c.resource_provider_id == tables.resource_providers.c.id,
    [traits.c.id, traits.c.name, traits.c.created_at, traits.c.updated_at],
    [traits.c.id])


def of_provider_named(conn, uuid):
    """(generation, its trait rows: id, name, created_at, updated_at) of
    the provider ``uuid``, in one statement; None when there is none.

    Oldest trait first, as the reference lists them: standard traits
    before custom ones.
    """
    return lookups.generation_and_rows(conn, _OF_PROVIDER_NAMED, uuid, 'id')


def traits_named(conn, names):
    """Trait rows (id, name, created_at, updated_at) for ``names``, by name."""
    if not names:
        return []
    return conn.execute(bulk.where_one_of(
        conn, sa.select(traits.c.id, traits.c.name, traits.c.created_at,
                        traits.c.updated_at), traits.c.name, names)
        .order_by(traits.c.name)).all()


def trait_ids_of(conn, provider_id):
    return set(conn.execute(
        sa.select(links.c.trait_id)
        .where(links.c.resource_provider_id == provider_id)).scalars())


def set_provider_traits(conn, provider_id, expected_generation, wanted_ids):
    """Give the provider exactly the traits ``wanted_ids``; the provider's
    generation afterwards.

    Only a change bumps the generation (from ``expected_generation``,
    raising providers.GenerationChanged when it moved), before the links
    are touched: a concurrent writer of the same provider then waits for
    this transaction and fails its own compare-and-bump.
    """
    if set(wanted_ids) == trait_ids_of(conn, provider_id):
        return expected_generation
    new_generation = providers.bump_generation_or_raise(
        conn, provider_id, expected_generation)
    providers.replace_links(conn, links, links.c.trait_id, provider_id,
                            wanted_ids)
    return new_generation
