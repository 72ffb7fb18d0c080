"""SQL for resource providers: rows, trees, filters, and removal.

Every function takes an open connection inside the caller's transaction.
"""

import functools
import typing

import sqlalchemy as sa

from placement_lite.db import bulk
from placement_lite.db import links
from placement_lite.db import locks
from placement_lite.db import lookups
from placement_lite.db import prepared
from placement_lite.db import tables

rp = tables.resource_providers


class DuplicateProvider(Exception):
    """An insert or update hit a unique constraint; ``column`` says which."""

    def __init__(self, column):
        super().__init__(column)
        self.column = column


class GenerationChanged(Exception):
    """A compare-and-bump found another generation than the one expected:
    another writer changed the provider first. The caller answers 409
    ``placement.concurrent_update``; its transaction rolls back."""


class StillReferenced(Exception):
    """A provider row could not be deleted: something (a child created
    meanwhile) still refers to it."""


def _duplicate_column(exc):
    """'uuid' or 'name': the unique column an IntegrityError is about, or None."""
    text = str(exc.orig)
    for column in ('uuid', 'name'):
        if ('uniq_resource_providers0' + column in text
                or 'resource_providers.' + column in text):
            return column
    return None


def _listing():
    """Providers, by id, as a listing shows them (see list_providers)."""
    parent = rp.alias('parent')
    root = rp.alias('root')
    return (
        sa.select(rp.c.uuid, rp.c.name, rp.c.generation,
                  parent.c.uuid.label('parent_provider_uuid'),
                  root.c.uuid.label('root_provider_uuid'),
                  rp.c.created_at, rp.c.updated_at)
        .select_from(
            rp.outerjoin(parent, rp.c.parent_provider_id == parent.c.id)
            .outerjoin(root, rp.c.root_provider_id == root.c.id))
        .order_by(rp.c.id))


#: Built once: building the aliases and their columns costs more than
#: running a small listing.
_LISTING = _listing()
#: Listings (and filters) of as many shapes are kept made, the last used.
_SHAPES = 512
_MEMBER = rp.alias('member')


@functools.cache
def _listing_by(name, uuid, in_tree):
    """The listing filtered by the given ones of ``:name``, ``:uuid`` and
    ``:in_tree`` (any provider of the tree), built once per combination:
    building a statement for each request costs a small listing a quarter
    of its time."""
    query = _LISTING
    if name:
        query = query.where(rp.c.name == sa.bindparam('name'))
    if uuid:
        query = query.where(rp.c.uuid == sa.bindparam('uuid'))
    if in_tree:
        query = query.where(rp.c.root_provider_id == sa.select(
            _MEMBER.c.root_provider_id).where(
                _MEMBER.c.uuid == sa.bindparam('in_tree')).scalar_subquery())
    return query


def insert_provider(conn, uuid, name, parent=None):
    """Insert a provider (under the ``parent`` row when given); its id.

    A root provider is its own root; the reference records that with an
    update, so a root starts with ``updated_at`` set and a child without.
    Raises DuplicateProvider when the uuid or name is taken.
    """
    now = lookups.utcnow()
    values = {'uuid': uuid, 'name': name, 'generation': 0, 'created_at': now}
    if parent is not None:
        values.update(parent_provider_id=parent.id,
                      root_provider_id=parent.root_provider_id)
    try:
        provider_id = conn.execute(
            rp.insert().values(**values)).inserted_primary_key[0]
    except sa.exc.IntegrityError as exc:
        column = _duplicate_column(exc)
        if column is None:
            raise
        raise DuplicateProvider(column)
    if parent is None:
        conn.execute(rp.update().where(rp.c.id == provider_id)
                     .values(root_provider_id=provider_id, updated_at=now))
    return provider_id


def update_provider(conn, provider_id, **values):
    """Set columns of one provider (and its ``updated_at``).

    Raises DuplicateProvider when the new name is taken.
    """
    try:
        conn.execute(rp.update().where(rp.c.id == provider_id)
                     .values(updated_at=lookups.utcnow(), **values))
    except sa.exc.IntegrityError as exc:
        column = _duplicate_column(exc)
        if column is None:
            raise
        raise DuplicateProvider(column)


def bump_generation(conn, provider_id, expected_generation):
    """Compare-and-increment a provider's generation; the new generation,
    or None when the stored one is not ``expected_generation``.

    The update holds the provider's row until the transaction ends, so
    concurrent writers of one provider queue here and then fail their own
    compare-and-bump.
    """
    result = conn.execute(
        rp.update()
        .where(rp.c.id == provider_id, rp.c.generation == expected_generation)
        .values(generation=expected_generation + 1,
                updated_at=lookups.utcnow()))
    if result.rowcount != 1:
        return None
    return expected_generation + 1


def bump_generations(conn, expected):
    """bump_generation for many providers ({id: expected generation}) in
    one statement; False when any was not at the generation expected."""
    return bulk.compare_and_bump(conn, rp, expected,
                                 updated_at=lookups.utcnow())


def bump_generation_or_raise(conn, provider_id, expected_generation):
    """bump_generation, raising GenerationChanged instead of None.

    Every write of what a provider has (inventories, traits) goes through
    this first: per-process caches keep a provider's stock while its
    generation is unchanged (see db.stock), so a write that does not bump
    it would leave them stale.
    """
    new_generation = bump_generation(conn, provider_id, expected_generation)
    if new_generation is None:
        raise GenerationChanged()
    return new_generation


def replace_links(conn, link_table, column, provider_id, wanted_ids):
    """Make a provider's rows in ``link_table`` (its traits or aggregates)
    name exactly ``wanted_ids`` in ``column``, touching only what changes.
    The caller has bumped or locked the provider."""
    wanted_ids = set(wanted_ids)
    current = set(conn.execute(
        sa.select(column)
        .where(link_table.c.resource_provider_id == provider_id)).scalars())
    stale = current - wanted_ids
    if stale:
        conn.execute(link_table.delete().where(
            link_table.c.resource_provider_id == provider_id,
            bulk.one_of(conn, column, sorted(stale))))
    bulk.insert(conn, link_table, [
        {column.name: linked_id} for linked_id in sorted(wanted_ids - current)],
        resource_provider_id=provider_id, created_at=lookups.utcnow())


def lock_provider(conn, provider_id):
    """Hold the provider's row until the transaction ends, or raise
    locks.Busy when another transaction holds it (a SQLite writer holds
    the whole database already)."""
    locks.lock_at_once(
        conn, locks.locking(sa.select(rp.c.id).where(rp.c.id == provider_id),
                            rp.c.id), rp.c.id, [provider_id])


def subtree_ids(conn, provider):
    """Ids of ``provider`` and all its descendants."""
    children = {}
    rows = conn.execute(
        sa.select(rp.c.id, rp.c.parent_provider_id)
        .where(rp.c.root_provider_id == provider.root_provider_id))
    for provider_id, parent_id in rows:
        children.setdefault(parent_id, []).append(provider_id)
    found = []
    pending = [provider.id]
    while pending:
        current = pending.pop()
        found.append(current)
        pending.extend(children.get(current, []))
    return found


def set_root(conn, provider_ids, root_id):
    conn.execute(rp.update().where(rp.c.id.in_(provider_ids))
                 .values(root_provider_id=root_id))


def has_children(conn, provider_id):
    return conn.execute(
        sa.select(rp.c.id).where(rp.c.parent_provider_id == provider_id)
        .limit(1)).first() is not None


def has_allocations(conn, provider_id):
    allocations = tables.allocations
    return conn.execute(
        sa.select(allocations.c.id)
        .where(allocations.c.resource_provider_id == provider_id)
        .limit(1)).first() is not None


def delete_provider(conn, provider_id):
    """Remove a provider with its inventories, trait and aggregate links."""
    for table in (tables.inventories, tables.resource_provider_aggregates,
                  tables.resource_provider_traits):
        conn.execute(table.delete()
                     .where(table.c.resource_provider_id == provider_id))
    conn.execute(rp.update().where(rp.c.id == provider_id)
                 .values(root_provider_id=None))
    try:
        conn.execute(rp.delete().where(rp.c.id == provider_id))
    except sa.exc.IntegrityError:
        raise StillReferenced()


class IdFilter(typing.NamedTuple):
    """An id query and its parameters, as list_providers combines them.

    ``misestimated``: PostgreSQL estimates the query at a row or two (a
    capacity query), so list_providers combines it with the others of its
    kind as sets; a link query (traits, aggregates) is estimated well and
    only narrows the providers the others let through."""

    query: object
    params: dict
    misestimated: bool = False
    #: A link filter's (link table, column, number of sets), which the
    #: listing asks of its providers together with its other link filters'
    #: (links.linked_to_all_sets).
    link_sets: tuple = ()


def _linked_to_each(link_table, column, id_sets):
    return IdFilter(
        links.linked_to_each(link_table, column, len(id_sets)),
        links.each_params(column, id_sets),
        link_sets=(link_table, column, len(id_sets)))


def providers_with_all_trait_sets(trait_id_sets):
    """Filter: ids of providers having at least one trait of every set."""
    return _linked_to_each(tables.resource_provider_traits, 'trait_id',
                           trait_id_sets)


def providers_with_any_trait(trait_ids):
    """Filter: ids of providers having any of the traits."""
    return IdFilter(links.linked_to_any(tables.resource_provider_traits,
                                        'trait_id'),
                    links.any_params('trait_id', trait_ids))


def providers_in_all_aggregate_sets(aggregate_id_sets):
    """Filter: ids of providers in at least one aggregate of every set."""
    return _linked_to_each(tables.resource_provider_aggregates,
                           'aggregate_id', aggregate_id_sets)


def providers_in_any_aggregate(aggregate_ids):
    """Filter: ids of providers in any of the aggregates."""
    return IdFilter(links.linked_to_any(tables.resource_provider_aggregates,
                                        'aggregate_id'),
                    links.any_params('aggregate_id', aggregate_ids))


def providers_with_capacity(resource_class_id, amount, number=0):
    """Filter: ids of providers whose inventory of the class can take
    ``amount``; ``number`` tells the capacity filters of one listing
    apart (their parameters are named for it).

    Capacity is ``(total - reserved) * allocation_ratio`` less what is
    allocated, and ``amount`` must also fit min_unit, max_unit and step_size.
    """
    return IdFilter(_with_capacity(number), {
        'capacity_class_%d' % number: resource_class_id,
        'capacity_amount_%d' % number: amount}, misestimated=True)


@functools.cache
def _with_capacity(number):
    inv = tables.inventories
    allocations = tables.allocations
    class_id = sa.bindparam('capacity_class_%d' % number)
    amount = sa.bindparam('capacity_amount_%d' % number, type_=sa.Integer)
    usage = (
        sa.select(allocations.c.resource_provider_id,
                  sa.func.sum(allocations.c.used).label('used'))
        .where(allocations.c.resource_class_id == class_id)
        .group_by(allocations.c.resource_provider_id)
        .subquery('usage'))
    return (
        sa.select(inv.c.resource_provider_id)
        .select_from(inv.outerjoin(
            usage, inv.c.resource_provider_id == usage.c.resource_provider_id))
        .where(inv.c.resource_class_id == class_id,
               sa.func.coalesce(usage.c.used, 0) + amount
               <= tables.capacity(inv),
               inv.c.min_unit <= amount,
               inv.c.max_unit >= amount,
               amount % inv.c.step_size == 0))


def any_row(conn, id_filter):
    """Whether the filter ``id_filter`` (as built above) selects
    anything."""
    return conn.execute(_first_row(id_filter.query),
                        id_filter.params).first() is not None


@functools.lru_cache(maxsize=_SHAPES)
def _first_row(query):
    return query.limit(1)


def list_providers(conn, name=None, uuid=None, in_tree=None,
                   within=(), excluding=()):
    """Rows of (uuid, name, generation, parent_provider_uuid,
    root_provider_uuid, created_at, updated_at), by provider id, for the
    providers matching every given filter. (Plain columns: a listing of
    thousands unpacks them faster than it reads a row's attributes.)

    ``in_tree`` is the uuid of any provider of the tree to list (none
    when no provider has it); its root is found by the same statement.

    ``within`` and ``excluding`` are lists of IdFilters: the provider
    must be selected by each of ``within`` and by none of ``excluding``.
    Misestimated ones (capacities) are combined as sets (INTERSECT)
    before the providers are read: PostgreSQL, which estimates a capacity
    query at a row or two, would otherwise run the next one again for
    every row of the first (390 ms instead of 12 for three classes at
    1,000 hosts). Link filters narrow what those let through, all of
    them one condition (links.linked_to_all_sets): as a set, the members
    of a large aggregate are all read (the sharing providers of a host's
    aggregates at 50,000 hosts: 23 ms against 6).
    """
    params = {'name': name, 'uuid': uuid, 'in_tree': in_tree}
    if not within and not excluding:
        # A tree's, a name's or a uuid's listing: prepared (db.prepared).
        return prepared.read(conn, _listing_by(
            bool(name), bool(uuid), bool(in_tree)), params)
    for id_filter in (*within, *excluding):
        params.update(id_filter.params)
    query = _listing_filtered(
        bool(name), bool(uuid), bool(in_tree),
        tuple(id_filter.link_sets for id_filter in within
              if not id_filter.misestimated),
        tuple(id_filter.query for id_filter in within
              if id_filter.misestimated),
        tuple(id_filter.query for id_filter in excluding))
    return conn.execute(query, params).all()


@functools.lru_cache(maxsize=_SHAPES)
def _listing_filtered(name, uuid, in_tree, link_sets, as_sets, excluding):
    """The listing of list_providers, built once per shape: the id
    queries and conditions of its filters are themselves made once per
    shape (links, _with_capacity), their values bound when it runs."""
    query = _listing_by(name, uuid, in_tree)
    if link_sets:
        query = query.where(links.linked_to_all_sets(link_sets))
    if as_sets:
        query = query.where(rp.c.id.in_(
            sa.intersect(*as_sets) if len(as_sets) > 1 else as_sets[0]))
    if excluding:
        query = query.where(rp.c.id.not_in(
            sa.union(*excluding) if len(excluding) > 1 else excluding[0]))
    return query
