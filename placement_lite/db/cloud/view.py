"""A request's view of the cloud: the one door through which the engine
reads what the process keeps (db.cloud.Cloud) and the database.

A View deals with both sources itself, so that nothing above it chooses
between them: what providers have and use, and where they are, it reads
into the Cloud's store scope by scope (the whole cloud, a window of
trees, one tree or the trees of some roots), or cuts from the store while
nothing has committed since the store read the whole cloud (at rest),
and it remembers which providers the request read; what is derived from
what providers are (the sharing providers and the trees they serve, the
providers in some aggregates) it takes from the Cloud while that holds,
else from the database (db.candidates: the SQL alone); which classes and
traits are held by few providers it reads, or takes from the Cloud's
holder counts.
"""

import time
import typing

import numpy as np

from placement_lite.db import candidates
from placement_lite.db.cloud import holdings
from placement_lite.db.cloud import reads
from placement_lite.db.cloud import store as kept
from placement_lite.db.cloud import summaries

Known = candidates.Known
RootWindow = candidates.RootWindow
#: The most holders of a class or trait whose trees alone are searched
#: (see View.holders_if_few): at 50,000 hosts, reading 10,000 costs 25 ms
#: of PostgreSQL's time, and saves reading tens of thousands of trees
#: that could not serve.
FEW_HOLDERS = 12_500
#: So many holders are read in a few milliseconds.
CHEAP_HOLDERS = 2_000
#: Seconds a class or trait found held by more providers than a read
#: wanted is not read again for as many (in this process): classes and
#: traits held widely stay so. The trees are counted as often.
RECHECK_WIDELY_HELD_AFTER = 600
#: The most lookups of providers by aggregates kept while what is derived
#: holds (see View.provider_ids_in_aggregates).
MEMBERSHIPS_KEPT = 64


def with_room(capacities, amount):
    """The part of ``capacities`` (holdings.Holdings) whose free capacity
    holds ``amount``."""
    return capacities.with_room(amount)


def within_units(capacities, amount):
    """The part of ``capacities`` whose min_unit, max_unit and step_size
    allow ``amount``."""
    return capacities.within_units(amount)


#: Fewer trees than this are always read by root.
FEW_TREES = 64


class Window(typing.NamedTuple):
    """Trees searched together: those whose root id is in
    ``first``..``last`` (inclusive), and with ``roots`` only those."""

    first: int
    last: int
    #: Whether it holds most of the cloud (see Snapshot._scope).
    most_of_cloud: bool
    #: A frozenset of root ids, or None for every tree of the range.
    roots: typing.Optional[frozenset] = None
    #: How many trees it holds.
    trees: int = 1

    @classmethod
    def of_roots(cls, roots):
        """The window of the trees ``roots`` (a few of the cloud's)."""
        return cls(min(roots), max(roots), False, frozenset(roots),
                   len(roots))

    def holds(self, root_id):
        return self.first <= root_id <= self.last and (
            self.roots is None or root_id in self.roots)

    def not_holding(self, root_ids):
        """Those of the set ``root_ids`` not in the window."""
        if self.roots is not None:
            return root_ids - self.roots
        first, last = self.first, self.last
        return {root_id for root_id in root_ids
                if not first <= root_id <= last}


def _cut(store, slots, root_id, window, also_ids):
    """Those of ``slots`` (of the whole cloud, in ``store``) a read of the
    tree ``root_id`` (within ``window``: only the providers ``also_ids``
    of it when the window does not hold it), or of ``window`` and the
    providers ``also_ids``, would find."""
    if root_id is None and window is None:
        return slots
    rows = store.slots.row[slots]
    roots = store.rows.root[rows]
    if root_id is not None:
        kept = roots == root_id
        if window is not None and not window.holds(root_id):
            kept &= _among(store.rows.id[rows], also_ids)
        return slots[kept]
    kept = (roots >= window.first) & (roots <= window.last)
    if window.roots is not None:
        kept &= _among(roots, window.roots)
    if also_ids:
        kept |= _among(store.rows.id[rows], also_ids)
    return slots[kept]


def _among(values, wanted):
    """Whether each of ``values`` (an array) is one of ``wanted``."""
    return np.isin(values, np.fromiter(wanted, np.int64, len(wanted)))


class View:
    """What one request reads (see the module's docstring): the
    providers it read, where each is, what it has and what it uses, as
    rows of the Cloud's store."""

    def __init__(self, conn, kept_cloud, known):
        """``kept_cloud``: the cloud.Cloud of ``conn``'s database;
        ``known``: the candidates.Known the request's first statement read
        (every class name, the names it names, and on PostgreSQL the
        transactions it saw)."""
        self.conn = conn
        self.known = known
        self.class_names = known.class_names
        self.transactions_seen = known.transactions_seen
        self.kept = kept_cloud
        self.store = kept_cloud.store
        #: The store's versions.changes before the request read anything
        #: of it: what the request keeps is kept as of then (firsts).
        self.changes_before = self.store.versions.changes
        self._at_rest = None
        self._derived_current = None
        #: Whether the request read every tree (the store, brought up to
        #: date by this request, is then what it read).
        self._whole = False
        #: {provider id: row} of every provider read, besides the whole
        #: cloud, as the store numbered its rows ``_numbered`` times.
        self._read_rows = {}
        self._numbered = self.store.versions.numbering
        #: Trees read whole: those of these windows and roots.
        self._windows = []
        self._trees = set()
        #: {frozenset of rc ids: whether few providers of a window read
        #: whole had an inventory of them}.
        self._rare_classes = {}

    def capacities(self, rc_ids, root_id=None, window=None, also_ids=()):
        """{rc id: holdings.Holdings} for every inventory of ``rc_ids``,
        of the providers of the whole cloud, or with ``root_id`` of that
        tree, or with ``window`` (a Window) of those trees and
        ``also_ids``: the cost is then bounded by the window (see _scope
        for how each is read)."""
        if not rc_ids:
            return {}
        scope, params = self._scope(root_id=root_id, window=window,
                                    rc_ids=rc_ids, also_ids=also_ids)
        store = self.store
        if scope == reads.WHOLE_CLOUD:
            if (window is None and root_id is None) or not (
                    self._whole or self.at_rest()):
                self._read_whole()
            else:
                # The store holds the whole cloud as it is: cut from it.
                self._whole = True
            return {rc_id: holdings.Holdings.of_slots(store, _cut(
                store, store.holders(rc_id), root_id, window, also_ids))
                for rc_id in rc_ids}
        rows = self._read(scope, params)
        if not scope.of_classes:
            self._cover(root_id, window)
        found = {rc_id: holdings.Holdings.of_slots(
            store, store.slots_of(rows, rc_id)) for rc_id in rc_ids}
        if window is not None and root_id is None and not scope.of_classes:
            holding = set().union(*found.values())
            self._rare_classes[frozenset(rc_ids)] = (
                4 * len(holding) < len(rows))
        return found

    def _scope(self, root_id=None, window=None, roots=None, rc_ids=(),
               also_ids=()):
        """(reads.Scope, its parameters): the one place deciding how
        the providers asked for are read.

        * The trees ``roots`` (summaries, stocks): by root, or the whole
          cloud when they are half of it or more and not few (filtering
          by root then costs more than reading the others).
        * The tree ``root_id``, within ``window`` when given.
        * A ``window`` of trees (and the providers ``also_ids``): the
          whole cloud, cut to the window, when it holds most of the cloud
          or the process's store holds the whole cloud as it is; only the
          providers with an inventory of ``rc_ids`` once a window read
          whole has shown that fewer than a quarter of its providers have
          one (few of its trees can be shown, and those are read again
          when they are).
        * Nothing: the whole cloud.
        """
        whole_cloud = reads.WHOLE_CLOUD, {}
        if roots is not None:
            if self._whole or self.at_rest() or (
                    len(roots) >= FEW_TREES and 2 * len(roots) >= (
                        self.trees_lately())):
                return whole_cloud
            return reads.Scope(by_roots=True), {'roots': sorted(roots)}
        params = {'root_id': root_id, 'rc_ids': sorted(rc_ids)}
        if window is None:
            if root_id is None or self._whole or self.at_rest():
                return whole_cloud
            return reads.Scope(by_root=True), params
        windowed = root_id is None
        of_classes = windowed and self._rare_classes.get(frozenset(rc_ids),
                                                         False)
        if self._whole or self.at_rest() or (
                windowed and window.most_of_cloud and not of_classes):
            return whole_cloud
        if window.roots is None:
            params.update(first=window.first, last=window.last)
        else:
            params['roots'] = sorted(window.roots)
        if also_ids:
            params['also_ids'] = sorted(also_ids)
        return reads.Scope(by_root=not windowed,
                           by_window=window.roots is None,
                           by_roots=window.roots is not None,
                           with_also=bool(also_ids),
                           of_classes=of_classes), params

    def _derived_holds(self):
        """Whether what the Cloud derived from what providers are holds
        now (reads.derived_current), asked once per request."""
        if self._derived_current is None:
            self._derived_current = reads.derived_current(
                self.conn, self.kept, self.transactions_seen) is not None
        return self._derived_current

    def at_rest(self):
        """Whether the store holds the whole cloud as it is: nothing has
        committed since it read it (reads.at_rest), asked once per
        request, in its first statement when it could."""
        if self._at_rest is None:
            self._at_rest = reads.at_rest(self.conn, self.store,
                                          self.transactions_seen)
        return self._at_rest

    # -- What the Cloud keeps for questions ---------------------------

    def firsts(self, key):
        """The kept first candidates of the keys.Key ``key`` (a
        firsts.Firsts), as of changes_before."""
        return self.kept.firsts(key, self.changes_before)

    def window_rate(self, key):
        """How many trees the last windowed search of ``key``'s question
        read per tree able to serve, or None."""
        return self.kept.window_rates.get(key)

    def keep_window_rate(self, key, rate):
        self.kept.window_rates.put(key, rate)

    def dispersion_turn(self, key):
        """Where ``key``'s question is in its dispersion turns, or None."""
        return self.kept.dispersion_turns.get(key)

    def keep_dispersion_turn(self, key, turn):
        self.kept.dispersion_turns.put(key, turn)

    # -- Trees in creation order --------------------------------------

    def root_window(self, after_id, count, before_id=None):
        """The candidates.RootWindow of the next ``count`` trees after
        root ``after_id`` and before ``before_id`` (None: no bound); None
        when there are no more."""
        return candidates.root_window(self.conn, after_id, count, before_id)

    def root_count(self):
        return candidates.root_count(self.conn)

    def nth_root(self, n):
        return candidates.nth_root(self.conn, n)

    def trees_lately(self):
        """How many trees there are, counted at most
        RECHECK_WIDELY_HELD_AFTER seconds ago (enough to tell few from
        many): the Cloud's tree count."""
        now = time.monotonic()
        until, trees = self.kept.tree_count
        if until <= now:
            trees = candidates.root_count(self.conn)
            self.kept.tree_count = (now + RECHECK_WIDELY_HELD_AFTER, trees)
        return trees

    # -- Who holds a class or a trait ---------------------------------

    def holders_if_few(self, rc_id=None, trait_ids=(), most=None):
        """{provider id: root id} of the providers holding an inventory of
        ``rc_id``, or having any of ``trait_ids``, when they are few: at
        most ``most`` (by default FEW_HOLDERS), and at most half as many
        as there are trees (searching their trees alone then reads at
        most half the cloud); otherwise None. Found held by more than
        ``most``, a class or trait is not read again for
        RECHECK_WIDELY_HELD_AFTER seconds with as few wanted (the Cloud's
        holder counts: at 50,000 hosts, the 10,000 holders of a trait read
        only to find them more than 5,000 cost 13 ms): whether it is read
        only decides how much a search reads, never what it finds. At
        rest, a class's holders are taken from the store."""
        key = ('class', rc_id) if rc_id is not None else (
            'traits', frozenset(trait_ids))
        widely_held = self.kept.widely_held
        now = time.monotonic()
        most = FEW_HOLDERS if most is None else min(most, FEW_HOLDERS)
        until, more_than = widely_held.get(key, (0, 0))
        if until > now and more_than >= most:
            return None
        from_store = rc_id is not None and self.at_rest()
        if from_store:
            found = self.kept.whole_holdings(rc_id)
        else:
            found = candidates.holders(self.conn, most + 1, rc_id, trait_ids)
        if len(found) > FEW_HOLDERS or 2 * len(found) > self.trees_lately():
            more_than = FEW_HOLDERS
        elif len(found) > most:
            more_than = most
        elif from_store:
            return dict(found.pairs())
        else:
            return dict(found)
        widely_held[key] = (now + RECHECK_WIDELY_HELD_AFTER, more_than)
        return None

    def few_enough(self, roots):
        """``roots`` (a collection of root ids, or {provider id: root id}),
        if they are few enough to search their trees alone (at most
        FEW_HOLDERS, and at most half the trees); else None."""
        if roots is None or len(roots) > FEW_HOLDERS or (
                2 * len(roots) > self.trees_lately()):
            return None
        return roots

    @staticmethod
    def worth_reading(narrowed):
        """The most holders worth reading to narrow the trees ``narrowed``
        (None: every tree) further: CHEAP_HOLDERS, or half as many as
        there are trees when more (reading more costs about what
        searching them would)."""
        return None if narrowed is None else max(CHEAP_HOLDERS,
                                                 len(narrowed) // 2)

    # -- What is derived from what providers are ----------------------

    def _derived(self, name, make):
        """``make()``, or what the Cloud derived of it while that holds."""
        if self._derived_holds():
            return self.kept.derived(name, make)
        return make()

    def sharing_provider_ids(self):
        """Ids of every provider sharing its inventory with its aggregates
        (for the providers a search did not read: the stock of those it
        read tells)."""
        return self._derived('sharing providers', lambda: (
            candidates.sharing_provider_ids(self.conn)))

    def _every_sharing_anchor(self):
        """anchors_for_sharing of every sharing provider, derived once."""
        return self.kept.derived('sharing anchors', lambda: dict(
            candidates.anchors_for_sharing(self.conn,
                                           self.sharing_provider_ids())))

    def anchors_for_sharing(self, sharing_ids):
        """{sharing provider id: root ids of the trees it serves}
        (candidates.anchors_for_sharing), while what is derived holds
        taken from the Cloud's anchors of every sharing provider."""
        if not self._derived_holds():
            return candidates.anchors_for_sharing(self.conn, sharing_ids)
        every = self._every_sharing_anchor()
        return {provider_id: every[provider_id] for provider_id in sharing_ids
                if provider_id in every}

    def find_every_sharing_anchor(self):
        """At start-up, derive the trees each sharing provider serves, for
        the first requests to find."""
        if self._derived_holds():
            self._every_sharing_anchor()

    def trees_served_by(self, sharing_ids):
        """The root ids of every tree one of ``sharing_ids`` serves, sorted
        and unique (an int64 array)."""
        def made():
            served = self.anchors_for_sharing(sharing_ids)
            return np.unique(np.fromiter(
                (root for roots in served.values() for root in roots),
                np.int64))
        return self._derived(('trees served by', frozenset(sharing_ids)),
                             made)

    def sharing_anchors_in_window(self, window):
        """{sharing provider id: root ids of the trees it serves}, for the
        trees of ``window`` (a Window): from the Cloud's anchors of every
        sharing provider while what is derived holds, else found from the
        window's side (candidates.sharing_anchors_in_window)."""
        first, last, roots = window.first, window.last, window.roots
        if not self._derived_holds():
            return candidates.sharing_anchors_in_window(self.conn, first,
                                                        last, roots)
        every = self._every_sharing_anchor()
        if roots is None:
            in_window = {provider_id: {root_id for root_id in anchors
                                       if first <= root_id <= last}
                         for provider_id, anchors in every.items()}
        else:
            in_window = {provider_id: anchors & roots
                         for provider_id, anchors in every.items()}
        return {provider_id: anchors
                for provider_id, anchors in in_window.items() if anchors}

    def provider_ids_in_aggregates(self, member_of, roots_only=False,
                                   forbidden=(), with_roots=False):
        """Ids of providers (root providers, with ``roots_only``) that are,
        for each set of aggregate uuids in ``member_of``, in at least one
        of them, and in none of ``forbidden``; with ``with_roots``, {their
        id: their root's id}. Never change what it gives: while what is
        derived holds it is kept by the Cloud for the next requests naming
        the same aggregates (the first MEMBERSHIPS_KEPT)."""
        aggregate_ids = self.known.aggregate_ids
        id_sets = [{aggregate_ids[uuid] for uuid in alternatives
                    if uuid in aggregate_ids}
                   for alternatives in member_of]
        if not all(id_sets):
            return {} if with_roots else set()
        forbidden_ids = {aggregate_ids[uuid] for uuid in forbidden
                         if uuid in aggregate_ids}

        def read():
            return candidates.provider_ids_in_aggregates(
                self.conn, id_sets, roots_only, forbidden_ids, with_roots)
        if not self._derived_holds():
            return read()
        kept = self.kept.derived('providers by aggregates', dict)
        key = (tuple(sorted(tuple(sorted(ids)) for ids in id_sets)),
               roots_only, tuple(sorted(forbidden_ids)), with_roots)
        found = kept.get(key)
        if found is None:
            found = read()
            if len(kept) < MEMBERSHIPS_KEPT:
                kept[key] = found
        return found

    def provider_ids_in_any_aggregate(self, uuids):
        """Ids of providers in any of the aggregates ``uuids``."""
        return candidates.provider_ids_in_any_aggregate(
            self.conn, uuids, self.known.aggregate_ids)

    # -- Providers by their traits, and other lookups -----------------

    def provider_ids_with_traits(self, required):
        return candidates.provider_ids_with_traits(self.conn, required)

    def provider_ids_with_any_trait(self, trait_ids):
        return candidates.provider_ids_with_any_trait(self.conn, trait_ids)

    def roots_with_traits(self, required_ids, forbidden_ids):
        return candidates.roots_with_traits(self.conn, required_ids,
                                            forbidden_ids)

    def roots_with_any_trait(self, trait_ids):
        return candidates.roots_with_any_trait(self.conn, trait_ids)

    def has_provider_trees(self):
        """Whether any provider has a parent (before 1.29, the reference's
        switch for what summaries show)."""
        return candidates.has_provider_trees(self.conn)

    def provider_uuids(self, provider_ids):
        return candidates.provider_uuids(self.conn, provider_ids)

    def roots_of(self, provider_ids):
        return candidates.roots_of(self.conn, provider_ids)

    def read_whole_cloud(self):
        """Read every provider, index who holds each class and the
        providers of each tree, as the first request searching the whole
        cloud would (what warm_caches needs); returns the summaries of
        every provider (summaries.Shown)."""
        self._read_whole()
        store = self.store
        for rc_id in np.unique(store.slots.rc[:store.slots.size]).tolist():
            store.holders(rc_id)
        store.trees()
        return summaries.Shown(self.kept, store.rows.id[self._every_row()],
                               self.class_names)

    def tree_order(self, orders):
        """The trees of the whole cloud (read now if not yet) in order of
        what they keep free of some classes: the orders.TreeOrder of
        ``orders`` ((rc id, sign), ...), kept with the process's store."""
        self._read_whole()
        return self.kept.tree_order(orders)

    def sharing_holders(self, rc_id):
        """The ids of the sharing providers having an inventory of
        ``rc_id`` (in the whole cloud), a frozenset."""
        self._read_whole()
        store = self.store

        def made():
            rows = store.slots.row[store.holders(rc_id)]
            return frozenset(store.rows.id[rows[store.sharing[
                store.rows.traits[rows]]]].tolist())
        return store.per_structure(('sharing holders', rc_id), made)

    def trait_holders(self, trait_name, rc_ids=(), roots_only=False):
        """(The root ids of the trees of the whole cloud (read now if not
        yet) where some provider has the trait ``trait_name`` and an
        inventory of one of ``rc_ids`` (of any class when empty; with
        ``roots_only``, whose root has the trait), unique; whether some
        such provider shares its inventory)."""
        self._read_whole()
        store = self.store

        def made():
            having = np.fromiter((trait_name in names
                                  for names in store.trait_sets), bool,
                                 len(store.trait_sets))
            rows = store.live_rows()
            rows = rows[having[store.rows.traits[rows]]]
            if rc_ids:
                rows = rows[np.isin(rows, np.concatenate(
                    [store.slots.row[store.holders(rc_id)]
                     for rc_id in rc_ids]))]
            shared = bool(store.sharing[store.rows.traits[rows]].any())
            if roots_only:
                rows = rows[store.rows.id[rows] == store.rows.root[rows]]
            return np.unique(store.rows.root[rows]), shared
        return store.per_structure(('trait holders', trait_name, tuple(rc_ids),
                                roots_only), made)

    def tree_read(self, root_id):
        """{provider id: uuid} of the providers of the tree ``root_id``
        read so far, in id order (reads nothing)."""
        store = self.store
        rows = self._rows_of_trees([root_id])
        return dict(zip(store.rows.id[rows].tolist(), store.uuids(rows)))

    def uuids_read(self, provider_ids):
        """{provider id: uuid} of those of ``provider_ids`` read so far
        (reads nothing)."""
        ids, rows = self._rows_read(provider_ids)
        read = rows != kept.DEAD
        return dict(zip(ids[read].tolist(), self.store.uuids(rows[read])))

    def sharing_among(self, provider_ids):
        """Those of ``provider_ids`` (all read) sharing their inventory:
        the trait is in their stock."""
        store = self.store
        ids, rows = self._rows_read(provider_ids)
        read = rows != kept.DEAD
        sharing = store.sharing[store.rows.traits[rows[read]]]
        return set(ids[read][sharing].tolist())

    def unread(self, provider_ids):
        """Those of ``provider_ids`` not read (reads nothing)."""
        ids, rows = self._rows_read(provider_ids)
        return set(ids[rows == kept.DEAD].tolist())

    def trait_names(self, provider_id):
        """The trait names of a provider read (reads nothing)."""
        store = self.store
        return store.trait_names(self._row(provider_id))

    def trait_names_of(self, provider_ids):
        """{provider id: its trait names} of providers read (reads
        nothing): their sets of names looked up at once."""
        ids, sets = self._trait_sets(provider_ids)
        names = self.store.trait_sets
        return dict(zip(ids.tolist(), [names[at] for at in sets.tolist()]))

    def trait_name_sets(self, provider_ids):
        """(``provider_ids`` as an array, the distinct sets of trait names
        they have, the index in those of each one's set) of providers
        read (reads nothing)."""
        ids, sets = self._trait_sets(provider_ids)
        found, at = np.unique(sets, return_inverse=True)
        names = self.store.trait_sets
        return ids, [names[index] for index in found.tolist()], at

    def with_traits(self, provider_ids, test):
        """Those of ``provider_ids`` (providers read) whose trait names
        pass ``test(names)``: asked once per set of names they have, not
        per provider."""
        ids, name_sets, at = self.trait_name_sets(provider_ids)
        passed = np.array([bool(test(names)) for names in name_sets], bool)
        return set(ids[passed[at]].tolist()) if len(ids) else set()

    def _trait_sets(self, provider_ids):
        """(``provider_ids`` as an array, the index of each one's set of
        trait names in the store's trait_sets: the empty set's for one
        gone since it was read)."""
        ids, rows = self._rows_read(provider_ids)
        sets = self.store.rows.traits[rows]
        sets[rows == kept.DEAD] = 0
        return ids, sets

    def parents(self, root_ids):
        """{provider id: parent id} for every provider of the given
        trees."""
        self._read_trees(root_ids)
        store = self.store
        rows = self._rows_of_trees(root_ids)
        return {provider_id: (None if parent == kept.DEAD else parent)
                for provider_id, parent in zip(
                    store.rows.id[rows].tolist(),
                    store.rows.parent[rows].tolist())}

    def summaries(self, root_ids):
        """The summaries.Shown of every provider of the trees rooted at
        ``root_ids``, in provider id order."""
        self._read_trees(root_ids)
        return summaries.Shown(
            self.kept, self.store.rows.id[self._rows_of_trees(root_ids)],
            self.class_names)

    # -- Which providers the request read ------------------------------

    @property
    def _rows(self):
        """{provider id: row} of every provider read (besides the whole
        cloud), numbered as the store numbers them now."""
        store = self.store
        if self._numbered != store.versions.numbering:
            ids = np.fromiter(self._read_rows, np.int64, len(self._read_rows))
            self._read_rows = dict(zip(ids.tolist(),
                                       store.rows_of(ids).tolist()))
            self._numbered = store.versions.numbering
        return self._read_rows

    def _row(self, provider_id):
        if self._whole:
            return self.store.row(provider_id)
        return self._rows[provider_id]

    def _rows_read(self, provider_ids):
        """(``provider_ids`` as an array, the row of each read or DEAD)."""
        ids = np.fromiter(provider_ids, np.int64, len(provider_ids))
        if self._whole:
            return ids, self.store.rows_of(ids)
        rows = self._rows
        return ids, np.fromiter((rows.get(p, kept.DEAD) for p in
                                 ids.tolist()), np.int64, len(ids))

    def _every_row(self):
        """Every row read, in provider id order."""
        store = self.store
        if self._whole:
            rows = store.live_rows()
        else:
            rows = np.fromiter(self._rows.values(), np.int64,
                               len(self._rows))
        return rows[np.argsort(store.rows.id[rows], kind='stable')]

    def _rows_of_trees(self, root_ids):
        """The rows read of the trees ``root_ids``, in provider id order."""
        store = self.store
        roots = np.fromiter(root_ids, np.int64, len(root_ids))
        if self._whole:
            rows = store.tree_rows(roots)
        else:
            rows = np.fromiter(self._rows.values(), np.int64,
                               len(self._rows))
            rows = rows[np.isin(store.rows.root[rows], roots)]
        return rows[np.argsort(store.rows.id[rows], kind='stable')]

    def _cover(self, root_id, window):
        """Note the trees just read whole: the tree ``root_id`` and/or the
        trees of ``window``."""
        if window is None:
            if root_id is not None:
                self._trees.add(root_id)
        elif root_id is None:
            self._windows.append(window)
        elif window.holds(root_id):
            self._trees.add(root_id)

    def _read_trees(self, root_ids):
        """Read every provider of the trees ``root_ids`` not read yet."""
        if self._whole:
            return
        missing = set(root_ids) - self._trees
        for window in self._windows:
            if not missing:
                return
            missing = window.not_holding(missing)
        if not missing:
            return
        scope, params = self._scope(roots=missing)
        if scope == reads.WHOLE_CLOUD:
            self._read_whole()
        else:
            self._read(scope, params)
            self._trees.update(missing)

    def _read_whole(self):
        """Bring the store up to the whole cloud, once per request."""
        if not self._whole:
            reads.read_whole(self.conn, self.kept, self._stock_scope,
                             self.transactions_seen)
            self._whole = True

    def _read(self, scope, params):
        """Read the providers of ``scope`` (not the whole cloud) into the
        store; their rows."""
        rows = reads.read_scope(self.conn, self.kept, scope, params,
                                self._stock_scope)
        self._rows.update(zip(self.store.rows.id[rows].tolist(),
                              rows.tolist()))
        return rows

    def _stock_scope(self, roots):
        """How the stocks of providers in the trees ``roots`` are read."""
        if len(roots) >= FEW_TREES and 2 * len(roots) >= (
                self.trees_lately()):
            return reads.WHOLE_CLOUD, {}
        return reads.Scope(by_roots=True), {'roots': sorted(roots)}
