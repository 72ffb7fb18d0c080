"""SQL for traits and their association with providers."""

import sqlalchemy as sa

from placement_lite.db import lookups
from placement_lite.db import tables

traits = tables.traits
rp_traits = tables.resource_provider_traits


def trait_by_name(conn, name):
    return conn.execute(sa.select(traits).where(traits.c.name == name)).first()


def try_insert_trait(conn, name):
    """Create a trait; returns its row, or None when a concurrent writer made it first.

    A savepoint keeps the caller's transaction usable after the refusal.
    """
    try:
        with conn.begin_nested():
            conn.execute(traits.insert().values(name=name,
                                                created_at=lookups.utcnow()))
    except sa.exc.IntegrityError:
        return None
    return trait_by_name(conn, name)


def delete_trait(conn, trait_id):
    conn.execute(traits.delete().where(traits.c.id == trait_id))


def trait_in_use(conn, trait_id):
    """Whether any provider has the trait."""
    return conn.execute(
        sa.select(rp_traits.c.trait_id).where(rp_traits.c.trait_id == trait_id)
        .limit(1)).first() is not None


def filtered_traits(conn, names=None, prefix=None, associated=None):
    """Trait rows, oldest first, narrowed by the given filters.

    ``names``: only these names. ``prefix``: names matching SQL ``LIKE
    'prefix%'`` case-insensitively, as the reference's databases compare.
    ``associated``: True for traits some provider has, False for traits no
    provider has.

    Oldest first, except that a list of names comes back in name order (the
    reference's database walks its name index for those).
    """
    query = sa.select(traits)
    if names is not None:
        query = query.where(traits.c.name.in_(sorted(set(names))))
    query = query.order_by(traits.c.id if names is None else traits.c.name)
    if prefix is not None:
        query = query.where(traits.c.name.ilike(prefix + '%'))
    if associated is not None:
        in_use = sa.exists().where(rp_traits.c.trait_id == traits.c.id)
        query = query.where(in_use if associated else ~in_use)
    return conn.execute(query).all()
