"""What a process keeps between requests, for allocation candidates: one
Cloud per database, the single owner of all of it.

The Cloud holds the providers (store.Store: packed columns, no Python
object per provider, inventory or allocation), patched in place by each
read that finds a write (reads.py), whoever made it: this process,
another, or another service on the same database; and everything made of
them or of the requests served: what is derived from what providers are,
the trees in the order of what they keep free (orders), every provider's
summary rendered (summaries.Arena), each tree's first candidate of a
question (firsts), how many trees a question's last search read per tree
able to serve (window rates), where each question's dispersion is
(dispersion turns), and which classes and traits are held widely (holder
counts). What a request reads of it is its own (view.View, the engine's
one door to it: the only code that reads the store's columns besides
this package's).

A process that reads the whole cloud before it forks (the uwsgi master,
``[placement] warm_caches_on_start``) hands every worker the same pages:
a worker reads the columns without writing them, and writes only the
few pages a patch changes (docs/architecture.md, "What a process keeps").
"""

import weakref

from placement_lite.db import candidates
from placement_lite.db.cloud import firsts
from placement_lite.db.cloud import holdings
from placement_lite.db.cloud import keys
from placement_lite.db.cloud import orders
from placement_lite.db.cloud import store
from placement_lite.db.cloud import view as views

# What the engine uses of this package, by name.
View = views.View
Window = views.Window
Known = views.Known
Holdings = holdings.Holdings
Key = keys.Key
roots_by_id = holdings.roots_by_id
with_room = views.with_room
within_units = views.within_units
NOT_KEPT = firsts.NOT_KEPT

#: The trait of a provider sharing its inventory with its aggregates.
SHARING_TRAIT = candidates.SHARING_TRAIT
#: The questions whose window rates and dispersion turns are kept.
QUESTIONS_KEPT = 512

#: {engine: Cloud}, per process.
_CLOUDS = weakref.WeakKeyDictionary()


class Cloud:
    """Everything one process keeps of one database (see the module's
    docstring; docs/architecture.md has a row per field). Writers hold
    ``lock``."""

    def __init__(self):
        self.store = store.Store(SHARING_TRAIT)
        self.lock = self.store.lock
        #: {name: what was derived from what providers are (their places,
        #: inventories, traits, aggregates)}, while that holds: on
        #: PostgreSQL since ``derived_since``, elsewhere while the
        #: database is at rest (see reads.derived_current).
        self.derived_sets = {}
        #: PostgreSQL: the transactions seen when the Cloud began deriving
        #: what ``derived_sets`` holds.
        self.derived_since = None
        #: {((rc id, sign), ...): orders.TreeOrder}.
        self.tree_orders = {}
        #: The summaries.Arena of the members rendered, or None.
        self.arena = None
        #: {(keys.Key, anchor): (made at, offer, providers, candidate)}.
        self.first_candidates = keys.ByKey(firsts.MOST_KEPT, self.lock)
        #: {keys.Key: trees searched per tree able to serve}.
        self.window_rates = keys.ByKey(QUESTIONS_KEPT, self.lock)
        #: {keys.Key: (next request's number, first offset, stride)}.
        self.dispersion_turns = keys.ByKey(QUESTIONS_KEPT, self.lock)
        #: {('class', rc id) or ('traits', frozenset of trait ids): (the
        #: monotonic time until which it holds, a number of holders found
        #: to be more than)}.
        self.widely_held = {}
        #: (the monotonic time until which it holds, how many trees there
        #: were).
        self.tree_count = (0, 0)

    def __getstate__(self):
        """What a pickle keeps (db/cloud/shared.py): no lock."""
        state = dict(vars(self))
        del state['lock']
        return state

    def __setstate__(self, state):
        vars(self).update(state)
        self.lock = self.store.lock
        for kept in (self.first_candidates, self.window_rates,
                     self.dispersion_turns):
            kept.lock = self.lock

    # -- Made of the store --------------------------------------------

    def tree_order(self, sorted_by):
        """The orders.TreeOrder for ``sorted_by`` ((rc id, sign), ...),
        made once and kept."""
        made = self.tree_orders.get(sorted_by)
        if made is None:
            made = self.tree_orders[sorted_by] = orders.TreeOrder(
                self.store, sorted_by)
        return made

    def whole_holdings(self, rc_id):
        """The holdings.Holdings of every holder of ``rc_id``."""
        return holdings.Holdings.of_slots(self.store,
                                          self.store.holders(rc_id))

    def derived(self, name, make):
        """What ``make()`` gives, made once while what it is made of is
        unchanged: for what requests would otherwise ask the database
        again (see reads.derived_current)."""
        made = self.derived_sets.get(name)
        if made is None:
            made = self.derived_sets[name] = make()
        return made

    def derive_again(self, transactions_seen):
        """Drop what was derived: what is derived from now on is as of
        ``transactions_seen`` or later."""
        self.derived_sets = {}
        self.derived_since = transactions_seen

    def compact_if_worth_it(self):
        """The store's rows and slots without the dead ones, once they are
        many (Store.compact_if_worth_it), and the arena numbered as the
        store numbers its rows."""
        with self.lock:
            live = self.store.compact_if_worth_it()
            if live is not None and self.arena is not None:
                self.arena.renumbered(live)

    def firsts(self, key, made_at):
        """The firsts.Firsts of the keys.Key ``key``, as of the store's
        ``versions.changes`` ``made_at``."""
        return firsts.Firsts(self, keys.checked(key), made_at)


def of(engine):
    """The Cloud kept for ``engine``, made empty when first asked for."""
    cloud = _CLOUDS.get(engine)
    if cloud is None:
        cloud = _CLOUDS[engine] = Cloud()
    return cloud


def adopt(engine, cloud):
    """Keep ``cloud`` (one another process made: db/cloud/shared.py) for
    ``engine``, in place of what was kept: every part of it refers to its
    own store."""
    _CLOUDS[engine] = cloud


def request_view(conn, classes=(), trait_names=(), aggregate_uuids=(),
                 tree_uuids=()):
    """The View of one request on ``conn``, its first statement reading
    the names it names (candidates.read_known): the classes, traits,
    aggregates and in_tree providers."""
    known = candidates.read_known(conn, classes, trait_names,
                                  aggregate_uuids, tree_uuids)
    return views.View(conn, of(conn.engine), known)


def forget(engine):
    """Keep nothing more for ``engine`` (tests)."""
    _CLOUDS.pop(engine, None)
