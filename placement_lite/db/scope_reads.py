"""Reads of a scope of trees: the whole cloud, a window of trees, one tree
or the trees of some roots.

For each scope two things are read, in one statement (each round trip to
the database costs more than most of these reads take to run): every
provider's place and version (parent, root, generation and, on SQLite,
creation time), and the amounts used per provider and resource class.
For the stocks not kept (see stock), the same scope gives the statements
reading uuids, inventories and traits.

A Read holds what one read found, and indexes who has an inventory of
each resource class when first asked.
"""

import functools
import typing

import sqlalchemy as sa

from placement_lite.db import links
from placement_lite.db import tables

rp = tables.resource_providers
inv = tables.inventories
alloc = tables.allocations
rpt = tables.resource_provider_traits
traits = tables.traits

# Built once: building an alias, and its columns, on every query costs more
# than running the small queries that use it.
in_scope_rp = rp.alias('in_scope')
_new_tuple = tuple.__new__


class Capacity(typing.NamedTuple):
    """One provider's inventory of one resource class, and its usage."""

    root_id: int
    #: int((total - reserved) * allocation_ratio), as summaries show it.
    capacity: int
    used: int
    min_unit: int
    max_unit: int
    step_size: int

    @property
    def free(self):
        return self.capacity - self.used


class Read:
    """The providers of one read, what they use, and who among them has an
    inventory of each resource class (indexed when first asked for). Never
    changed once made: a later request may share it, or patch a copy of it
    (see cloud)."""

    __slots__ = ('providers', 'used', 'holders_by_class', '_capacities')

    def __init__(self, providers, used, holders=None):
        #: {provider id: (parent id, root id, stock.Stock)}
        self.providers = providers
        #: {provider id: {rc id: amount used}}; no entry: nothing used.
        self.used = used
        #: {rc id: {provider id: (root id, capacity, min_unit, max_unit,
        #: step_size)}}
        self.holders_by_class = {} if holders is None else holders
        #: {rc id: {provider id: Capacity}}, made when first asked for.
        self._capacities = {}

    def capacities(self, rc_ids):
        """{rc id: {provider id: Capacity}} of every inventory of
        ``rc_ids``, with the usage of this read."""
        made = self._capacities
        missing = [rc_id for rc_id in rc_ids if rc_id not in made]
        if missing:
            holders = self._holders(missing)
            used_of = self.used
            for rc_id in missing:
                found = {}
                for provider_id, (tree, capacity, min_unit, max_unit,
                                  step_size) in holders[rc_id].items():
                    used = used_of.get(provider_id)
                    # tuple.__new__: a third of the cost of Capacity(...).
                    found[provider_id] = _new_tuple(Capacity, (
                        tree, capacity, used.get(rc_id, 0) if used else 0,
                        min_unit, max_unit, step_size))
                made[rc_id] = found
        return {rc_id: made[rc_id] for rc_id in rc_ids}

    def holders_of(self, rc_id):
        """{provider id: (root id, capacity, min_unit, max_unit,
        step_size)} of every holder of ``rc_id`` (never change it)."""
        return self._holders([rc_id])[rc_id]

    def _holders(self, rc_ids):
        """The holders of at least the classes ``rc_ids``: {rc id:
        {provider id: (root id, capacity, min_unit, max_unit,
        step_size)}}, indexing those not indexed yet in one pass."""
        holders = self.holders_by_class
        missing = {rc_id: {} for rc_id in rc_ids if rc_id not in holders}
        if missing:
            index(self.providers, missing)
            holders.update(missing)
        return holders


def index(places, holders):
    """Add to ``holders`` ({rc id: {provider id: (root id, capacity,
    min_unit, max_unit, step_size)}}) what the providers ``places`` ({id:
    (parent id, root id, stock.Stock)}) hold of those classes."""
    for provider_id, (_parent, root_id, stock) in places.items():
        for rc_id, capacity, min_unit, max_unit, step_size in stock[3]:
            held = holders.get(rc_id)
            if held is not None:
                held[provider_id] = (root_id, capacity, min_unit, max_unit,
                                     step_size)


class Scope(typing.NamedTuple):
    """Which providers a read covers: those of the tree ``:root_id``
    (``by_root``), of the window of trees ``:first``..``:last`` (inclusive
    root ids; ``by_window``) or of the trees ``:roots`` (``by_roots``),
    widened to the providers ``:also_ids`` (``with_also``); of those, only
    providers with an inventory of the classes ``:rc_ids``
    (``of_classes``). None of them: the whole cloud."""

    by_root: bool = False
    by_window: bool = False
    with_also: bool = False
    by_roots: bool = False
    of_classes: bool = False

    def conditions(self, providers):
        """The scope as conditions on the ``providers`` table."""
        root = providers.c.root_provider_id
        conditions = []
        if self.by_root:
            conditions.append(root == sa.bindparam('root_id'))
        trees = None
        if self.by_window:
            trees = root.between(sa.bindparam('first'), sa.bindparam('last'))
        if self.by_roots:
            trees = root.in_(links.list_param('roots'))
        if trees is not None:
            if self.with_also:
                trees = sa.or_(trees, providers.c.id.in_(
                    links.list_param('also_ids')))
            conditions.append(trees)
        if self.of_classes:
            conditions.append(providers.c.id.in_(
                sa.select(inv.c.resource_provider_id).where(
                    inv.c.resource_class_id.in_(
                        links.list_param('rc_ids')))))
        return conditions

    def of_providers(self, query, provider_id):
        """``query`` restricted to rows whose ``provider_id`` is in the
        scope."""
        if self == WHOLE_CLOUD:
            return query
        return query.where(provider_id.in_(
            sa.select(in_scope_rp.c.id).where(
                *self.conditions(in_scope_rp))))


WHOLE_CLOUD = Scope()


class Queries(typing.NamedTuple):
    """The statements reading one scope: place and version with usage, on
    every read; uuids, inventories and traits for stale stocks."""

    #: Rows (id, parent id, root id, generation, identity, None, None) for
    #: the providers, then (provider id, None, None, None, None, rc id,
    #: amount used) for their usage.
    places_and_usage: object
    uuids: object
    inventories: object
    traits: object


#: What tells a provider from an earlier one with the same id, where ids
#: are never reused: every provider has the same. (Not empty: in a state
#: line, an empty identity stands for a missing creation time.)
ONE_IDENTITY = '*'


def identity(ids_reused):
    if ids_reused:
        # Text: cheaper to read than a datetime, as good to compare.
        return sa.cast(rp.c.created_at, sa.Text)
    # Reading the creation time costs a third of the whole read.
    return sa.literal(ONE_IDENTITY, sa.Text)


@functools.cache
def queries(scope, ids_reused):
    no_integer = sa.cast(sa.null(), sa.Integer)
    state = sa.select(rp.c.id, rp.c.parent_provider_id,
                      rp.c.root_provider_id, rp.c.generation,
                      identity(ids_reused), no_integer, no_integer)
    usage = (sa.select(alloc.c.resource_provider_id, no_integer, no_integer,
                       no_integer, sa.cast(sa.null(), sa.Text),
                       alloc.c.resource_class_id, sa.func.sum(alloc.c.used))
             .group_by(alloc.c.resource_provider_id,
                       alloc.c.resource_class_id))
    uuids = sa.select(rp.c.id, rp.c.uuid)
    inventories = (
        sa.select(inv.c.resource_provider_id, inv.c.resource_class_id,
                  inv.c.total, inv.c.reserved, inv.c.allocation_ratio,
                  inv.c.min_unit, inv.c.max_unit, inv.c.step_size)
        .order_by(inv.c.resource_class_id))
    trait_names = (
        sa.select(rpt.c.resource_provider_id, traits.c.name)
        .select_from(rpt.join(traits, traits.c.id == rpt.c.trait_id))
        .order_by(rpt.c.trait_id))
    return Queries(
        sa.union_all(state.where(*scope.conditions(rp)),
                     scope.of_providers(usage, alloc.c.resource_provider_id)),
        uuids.where(*scope.conditions(rp)),
        scope.of_providers(inventories, inv.c.resource_provider_id),
        scope.of_providers(trait_names, rpt.c.resource_provider_id))


def rows(conn, query, params):
    """Every row of ``query`` as a plain tuple, read straight from the
    database driver: for the large reads, where building SQLAlchemy's Row
    objects costs more than it gives."""
    result = conn.execute(query, params)
    try:
        return result.cursor.fetchall()
    finally:
        result.close()


def read(conn, scope, params, place):
    """The Read of ``scope`` (not the whole cloud: see cloud) with
    ``params``; ``place(rows)`` places the providers of the state rows
    read (see stock.places)."""
    state = []
    used = {}
    for row in rows(conn, queries(scope, ids_reused(conn)).places_and_usage,
                    params):
        rc_id = row[5]
        if rc_id is None:
            state.append(row[:5])
        elif row[0] in used:
            used[row[0]][rc_id] = row[6]
        else:
            used[row[0]] = {rc_id: row[6]}
    return Read(place(state), used)


def ids_reused(conn):
    """Whether the database gives a deleted provider's id to a later one
    (SQLite); PostgreSQL takes ids from a sequence."""
    return conn.dialect.name != 'postgresql'
