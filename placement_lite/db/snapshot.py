"""What the providers an allocation-candidates request looks at have and
use, read once per request and shared by the search, the combination and
the provider summaries.

The providers themselves are kept by the process between requests
(db.cloud): a Snapshot reads each scope of trees the request looks at
(the whole cloud, a window of trees, one tree or the trees of some
roots) into that store, or takes it from the store while nothing has
committed since the store read the whole cloud, and remembers which
providers it read.
"""

import typing

import numpy as np

from placement_lite.db import candidates
from placement_lite.db import cloud
from placement_lite.db.cloud import holdings
from placement_lite.db.cloud import reads
from placement_lite.db.cloud import store as kept
from placement_lite.db.cloud import summaries


def with_room(capacities, amount):
    """The part of ``capacities`` (holdings.Holdings) whose free capacity
    holds ``amount``."""
    return capacities.with_room(amount)


def within_units(capacities, amount):
    """The part of ``capacities`` whose min_unit, max_unit and step_size
    allow ``amount``."""
    return capacities.within_units(amount)


def with_room_for_a_part(capacities, amount):
    """The part of ``capacities`` whose free capacity holds a part of
    ``amount`` (can_split, 1.44): at least their smallest part."""
    return capacities.with_room_for_a_part()


def within_units_for_a_part(capacities, amount):
    """The part of ``capacities`` whose units allow a part of
    ``amount``: their smallest part within max_unit and the amount."""
    return capacities.within_units_for_a_part(amount)


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


class Snapshot:
    """The providers one request has read: where each is, what it has
    and what it uses, as rows of the process's store (db.cloud)."""

    def __init__(self, conn, class_names, transactions_seen=None):
        """``class_names`` maps every resource class id to its name;
        ``transactions_seen``: what the request's first statement saw
        (candidates.Known), on PostgreSQL."""
        self.conn = conn
        self.class_names = class_names
        self.transactions_seen = transactions_seen
        self.store = cloud.of(conn.engine)
        self._at_rest = None
        self._derived_current = None
        #: Whether the request read every tree (the store, brought up to
        #: date by this request, is then what it read).
        self._whole = False
        #: {provider id: row} of every provider read, besides the whole
        #: cloud, as the store numbered its rows ``_numbered`` times.
        self._read_rows = {}
        self._numbered = self.store.compactions
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
                        candidates.trees_lately(self.conn))):
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

    def derived_current(self):
        """The store, when what it derived from the database holds now
        (reads.derived_current), asked once per request; else None."""
        if self._derived_current is None:
            self._derived_current = reads.derived_current(
                self.conn, self.store, self.transactions_seen) is not None
        return self.store if self._derived_current else None

    def at_rest(self):
        """The process's store, when it holds the whole cloud as it is:
        nothing has committed since it read it (reads.at_rest), asked
        once per request, in its first statement when it could; else
        None."""
        if self._at_rest is None:
            self._at_rest = reads.at_rest(self.conn, self.store,
                                          self.transactions_seen)
        return self.store if self._at_rest else None

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
        return summaries.Shown(store, store.rows.id[self._every_row()],
                               self.class_names)

    def tree_order(self, orders):
        """The trees of the whole cloud (read now if not yet) in order of
        what they keep free of some classes: the orders.TreeOrder of
        ``orders`` ((rc id, sign), ...), kept with the process's store."""
        self._read_whole()
        return cloud.tree_order(self.store, orders)

    def sharing_holders(self, rc_id):
        """The ids of the sharing providers having an inventory of
        ``rc_id`` (in the whole cloud), a frozenset."""
        self._read_whole()
        store = self.store

        def made():
            rows = store.slots.row[store.holders(rc_id)]
            return frozenset(store.rows.id[rows[store.sharing[
                store.rows.traits[rows]]]].tolist())
        return store.per_shape(('sharing holders', rc_id), made)

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
        return store.per_shape(('trait holders', trait_name, tuple(rc_ids),
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
            self.store, self.store.rows.id[self._rows_of_trees(root_ids)],
            self.class_names)

    # -- Which providers the request read ------------------------------

    @property
    def _rows(self):
        """{provider id: row} of every provider read (besides the whole
        cloud), numbered as the store numbers them now."""
        store = self.store
        if self._numbered != store.compactions:
            ids = np.fromiter(self._read_rows, np.int64, len(self._read_rows))
            self._read_rows = dict(zip(ids.tolist(),
                                       store.rows_of(ids).tolist()))
            self._numbered = store.compactions
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
            reads.read_whole(self.conn, self.store, self._stock_scope,
                             self.transactions_seen)
            self._whole = True

    def _read(self, scope, params):
        """Read the providers of ``scope`` (not the whole cloud) into the
        store; their rows."""
        rows = reads.read_scope(self.conn, self.store, scope, params,
                                self._stock_scope)
        self._rows.update(zip(self.store.rows.id[rows].tolist(),
                              rows.tolist()))
        return rows

    def _stock_scope(self, roots):
        """How the stocks of providers in the trees ``roots`` are read."""
        if len(roots) >= FEW_TREES and 2 * len(roots) >= (
                candidates.trees_lately(self.conn)):
            return reads.WHOLE_CLOUD, {}
        return reads.Scope(by_roots=True), {'roots': sorted(roots)}
