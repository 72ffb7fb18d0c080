"""The cloud a process keeps between requests, for allocation candidates:
every provider's place, stock and usage, its summary as answers render
it, and the trees in the order a ranked request walks them.

One store per database (store.Store: packed columns, no Python object
per provider, inventory or allocation), patched in place by each read
that finds a write (reads.py), whoever made it: this process, another,
or another service on the same database. What each request reads of it
is its own (snapshot.Snapshot, holdings.Holdings, summaries.Shown).

A process that reads the whole cloud before it forks (the uwsgi master,
``[placement] warm_caches_on_start``) hands every worker the same pages:
a worker reads the columns without writing them, and writes only the
few pages a patch changes (docs/architecture.md, "What a process keeps").
"""

import weakref

from placement_lite.db.cloud import holdings
from placement_lite.db.cloud import orders
from placement_lite.db.cloud import store as kept

#: The trait of a provider sharing its inventory with its aggregates.
SHARING_TRAIT = 'MISC_SHARES_VIA_AGGREGATE'

#: {engine: store.Store}, per process.
_KEPT = weakref.WeakKeyDictionary()


def of(engine):
    """The store kept for ``engine``, made empty when first asked for."""
    store = _KEPT.get(engine)
    if store is None:
        store = _KEPT[engine] = kept.Store()
        store.sharing_trait = SHARING_TRAIT
    return store


def forget(engine):
    """Keep nothing more for ``engine`` (tests)."""
    _KEPT.pop(engine, None)


def tree_order(store, sorted_by):
    """The orders.TreeOrder of ``store`` for ``sorted_by`` ((rc id,
    sign), ...), made once and kept with it."""
    made = store.tree_orders.get(sorted_by)
    if made is None:
        made = store.tree_orders[sorted_by] = orders.TreeOrder(store,
                                                                sorted_by)
    return made


def whole_holdings(store, rc_id):
    """The holdings.Holdings of every holder of ``rc_id`` in ``store``."""
    return holdings.Holdings.of_slots(store, store.holders(rc_id))
