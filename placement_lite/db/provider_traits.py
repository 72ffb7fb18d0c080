"""SQL for the traits a resource provider has."""

import sqlalchemy as sa

from placement_lite.db import bulk
from placement_lite.db import providers
from placement_lite.db import tables

traits = tables.traits
links = tables.resource_provider_traits


_TRAITS_OF = (
    sa.select(traits.c.id, traits.c.name, traits.c.created_at,
              traits.c.updated_at)
    .select_from(traits.join(links, traits.c.id == links.c.trait_id))
    .where(links.c.resource_provider_id == sa.bindparam('provider_id'))
    .order_by(traits.c.id))


def traits_of(conn, provider_id):
    """The provider's trait rows (id, name, created_at, updated_at).

    Oldest trait first, as the reference lists them: standard traits before
    custom ones.
    """
    return conn.execute(_TRAITS_OF, {'provider_id': provider_id}).all()


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
