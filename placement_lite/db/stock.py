"""What each provider has (its uuid, its inventories and its trait
names: its stock), kept per process between requests, for each provider
as of its generation.

Every change to inventories or traits bumps the generation in the same
transaction (the write functions of db.inventories and db.provider_traits
do it themselves, here as in the reference; the test suite's generation
guard fails any write that does not), so a kept stock is good while the
generation just read is unchanged. On SQLite, which gives the id of a
deleted provider to the next one created, the creation time tells the two
apart (a provider without one is read every time); PostgreSQL takes ids
from a sequence and never gives one out twice, so there it is not read.

Usage is never kept here, because deleting a consumer's allocations does
not bump the generation; nor are parent and root, because re-parenting
does not bump it either.
"""

import collections
import sys
import typing
import weakref

import sqlalchemy as sa

from placement_lite import observe
from placement_lite.db import scope_reads
from placement_lite.db import tables

#: A ByProvider starts dropping the entries of deleted providers once it
#: holds more than this many.
PRUNE_AT = 200_000


class ByProvider(dict):
    """What a process keeps per provider id, for as many providers as the
    cloud has: nothing is forgotten but what deleted providers left.
    Deleted providers are never looked up again, so when the entries
    outnumber ``prune_at`` those of providers gone are dropped (one read
    of every provider id) and the next pruning waits until they are twice
    as many as were left: amortized, a few ids read per entry kept, and
    no request ever finds the cache emptied."""

    def __init__(self):
        super().__init__()
        self.prune_at = PRUNE_AT

    def prune(self, conn):
        if len(self) <= self.prune_at:
            return
        for provider_id in self.keys() - set(
                conn.execute(_PROVIDER_IDS).scalars()):
            del self[provider_id]
        self.prune_at = max(PRUNE_AT, 2 * len(self))


_PROVIDER_IDS = sa.select(tables.resource_providers.c.id)
#: {engine: ByProvider of Stock}, per process.
_KEPT = weakref.WeakKeyDictionary()


def kept_stocks(conn):
    """The ByProvider of the stocks kept for ``conn``'s engine."""
    kept = _KEPT.get(conn.engine)
    if kept is None:
        kept = _KEPT[conn.engine] = ByProvider()
    return kept


class Stock(typing.NamedTuple):
    """What a provider has, as of one generation.

    Hot loops read the first two fields by index: attribute access on a
    named tuple costs more than the comparison."""

    generation: int
    #: The creation time as text (SQLite), or scope_reads.ONE_IDENTITY.
    identity: object
    uuid: str
    #: ((rc id, capacity, min_unit, max_unit, step_size), ...) in class id
    #: order.
    inventories: tuple
    #: Trait names in trait id order.
    trait_names: tuple


def places(conn, rows, scope_of_trees):
    """{provider id: (parent id, root id, Stock)} for the state ``rows``
    ((id, parent id, root id, generation, identity) as just read), reading
    the stocks not kept with the scope ``scope_of_trees(root ids)`` gives
    (see Snapshot._scope); a provider deleted since is left out."""
    kept = kept_stocks(conn)
    places = {}
    # {provider id: (parent id, root id, generation, identity)} of
    # those whose stock must be read.
    stale = {}
    for id_, parent_id, root_id, generation, identity in rows:
        stock = kept.get(id_)
        if (stock is not None and stock[0] == generation
                and stock[1] == identity):
            places[id_] = (parent_id, root_id, stock)
        else:
            stale[id_] = (parent_id, root_id, generation, identity)
    observe.watcher.stocks(kept=len(places), read=len(stale))
    if stale:
        fresh = _read(conn, stale, scope_of_trees)
        places.update((id_, stale[id_][:2] + (stock,))
                      for id_, stock in fresh.items())
    return places


def _read(conn, stale, scope_of_trees):
    """Fresh Stock for ``stale`` ({provider id: (parent id, root id,
    generation, identity)} as just read), read with the trees they
    are in, and kept; none for a provider deleted since."""
    scope, params = scope_of_trees(
        {root_id for _parent, root_id, _g, _c in stale.values()})
    queries = scope_reads.queries(scope, scope_reads.ids_reused(conn))
    uuids = {id_: uuid
             for id_, uuid in scope_reads.rows(conn, queries.uuids, params)
             if id_ in stale}
    inventories = collections.defaultdict(list)
    for (provider_id, rc_id, total, reserved, ratio, min_unit, max_unit,
         step_size) in scope_reads.rows(conn, queries.inventories, params):
        if provider_id in stale:
            inventories[provider_id].append(
                (rc_id, tables.capacity_of(total, reserved, ratio),
                 min_unit, max_unit, step_size))
    names = collections.defaultdict(list)
    # One string per trait name, however many providers have it: the
    # driver makes a new one per row, and a process keeps them all.
    for provider_id, name in scope_reads.rows(conn, queries.traits, params):
        if provider_id in stale:
            names[provider_id].append(sys.intern(name))
    fresh = {id_: Stock(generation, identity, uuids[id_],
                         tuple(inventories[id_]), tuple(names[id_]))
             for id_, (_parent, _root, generation, identity)
             in stale.items() if id_ in uuids}
    kept = kept_stocks(conn)
    kept.update((id_, stock) for id_, stock in fresh.items()
                if stock.identity is not None)
    kept.prune(conn)
    return fresh
