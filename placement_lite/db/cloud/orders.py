"""The trees of the whole cloud in the order of what they keep free of some
resource classes: how a ranked request finds the best trees of the cloud
without searching every one (engine/ranked_search.py).

For a class, a tree's *free* amount is the sum, over its providers having
an inventory of it, of capacity less usage, and its *most* the largest of
those; a tree without one has (0, 0). A tree's key is ``(sign x free of
each class, ..., root id)``, the sign -1 to put the most free first
(spread), +1 the least (pack). Per class, every tree's amounts are one
array (by tree, in root id order), made again once the kept providers
changed; the order is one array of trees sorted by key.
"""

import bisect

import numpy as np


class TreeOrder:
    """Every tree of ``store``, by key for ``orders`` ((rc id, sign),
    ...), as the store is when asked (made again after it changed)."""

    def __init__(self, store, orders):
        self.store = store
        self.orders = orders
        #: The store's versions.usage the order was made at.
        self._made_at = None

    def _current(self):
        store = self.store
        if self._made_at != store.versions.usage:
            with store.lock:
                _order, self._roots, _starts = store.trees()
                self._amounts = {}
                terms = [sign * self._free(rc_id)[0]
                         for rc_id, sign in self.orders]
                self._terms = terms
                self._sorted = np.lexsort([self._roots] + terms[::-1])
                #: Each tree's place in _sorted, made when first needed.
                self._rank = None
                self._made_at = store.versions.usage
        return self

    def warm(self):
        """Make the order now (at start-up: see engine.warm_caches)."""
        self._current()

    def _free(self, rc_id):
        """(Free, most) of ``rc_id`` per tree, as arrays by tree."""
        made = self._amounts.get(rc_id)
        if made is None:
            store = self.store
            slots = store.holders(rc_id)
            rows = store.slots.row[slots]
            trees = np.searchsorted(self._roots, store.rows.root[rows])
            kept_free = store.slots.capacity[slots] - store.slots.used[slots]
            free = np.zeros(len(self._roots), np.int64)
            most = np.zeros(len(self._roots), np.int64)
            np.add.at(free, trees, kept_free)
            np.maximum.at(most, trees, kept_free)
            made = self._amounts[rc_id] = (free, most)
        return made

    def _key(self, tree):
        return (*(int(term[tree]) for term in self._terms),
                int(self._roots[tree]))

    def _tree(self, root_id):
        roots = self._roots
        at = int(np.searchsorted(roots, root_id))
        if at < len(roots) and roots[at] == root_id:
            return at
        return None

    def key_of(self, root_id):
        """The key of the tree ``root_id``; None for no tree."""
        self._current()
        tree = self._tree(root_id)
        return None if tree is None else self._key(tree)

    def holds(self, root_id, asked):
        """Whether the tree ``root_id`` keeps free what ``asked`` ({rc id:
        (amount in all, the most one group asks)}) needs: as much in all,
        and the most a group asks on one provider."""
        self._current()
        tree = self._tree(root_id)
        return tree is not None and bool(self._holding(
            np.array([tree]), asked)[0])

    def _holding(self, trees, asked):
        holding = np.ones(len(trees), bool)
        for rc_id, (amount, of_one) in asked.items():
            free, most = self._free(rc_id)
            holding &= (free[trees] >= amount) & (most[trees] >= of_one)
        return holding

    def ordered(self, root_ids, asked):
        """[(key, root id)] in order of those of the trees ``root_ids``
        keeping free what ``asked`` needs (see holds)."""
        with self.store.lock:
            self._current()
            roots = self._roots
            ids = np.fromiter(root_ids, np.int64, len(root_ids))
            trees = np.searchsorted(roots, ids)
            trees = trees[trees < len(roots)]
            trees = trees[np.isin(roots[trees], ids)]
            trees = trees[self._holding(trees, asked)]
            if self._rank is None:
                self._rank = np.empty(len(self._sorted), np.int64)
                self._rank[self._sorted] = np.arange(len(self._sorted))
            trees = trees[np.argsort(self._rank[trees])]
            return [(self._key(tree), int(roots[tree]))
                    for tree in trees.tolist()]

    def after(self, key, count, asked, lowest=None, highest=None,
              among=None, outside=None):
        """(The next ``count`` (key, root id), in order, of the trees
        keeping free what ``asked`` needs (see holds), after ``key`` (None:
        from the start), of those whose key lies between ``lowest`` and
        ``highest`` (None: no bound), whose root id is in ``among`` and not
        in ``outside`` (arrays; None: any); the last key looked at, None
        when there is no more)."""
        with self.store.lock:
            self._current()
            keys = _SortedKeys(self)
            if key is None:
                start = 0 if lowest is None else bisect.bisect_left(keys,
                                                                    lowest)
            else:
                start = bisect.bisect_right(keys, key)
            end = (len(keys) if highest is None
                   else bisect.bisect_right(keys, highest))
            found = []
            last = None
            step = max(count, 64)
            while start < end and len(found) < count:
                chunk = self._sorted[start:min(end, start + step)]
                holding = self._holding(chunk, asked)
                if among is not None:
                    holding &= np.isin(self._roots[chunk], among)
                if outside is not None:
                    holding &= ~np.isin(self._roots[chunk], outside)
                holding = np.flatnonzero(holding)
                trees = chunk[holding[:count - len(found)]]
                roots = self._roots[trees].tolist()
                found.extend(zip(zip(*(term[trees].tolist()
                                       for term in self._terms), roots),
                                 roots))
                if len(found) == count:
                    last = found[-1][0]
                else:
                    last = self._key(int(chunk[-1]))
                start += len(chunk)
                # Few trees may pass: look at more at a time.
                step *= 2
            return found, last


class _SortedKeys:
    """The keys of a TreeOrder in order, as a sequence bisect searches."""

    def __init__(self, order):
        self._order = order

    def __len__(self):
        return len(self._order._sorted)

    def __getitem__(self, at):
        return self._order._key(int(self._order._sorted[at]))

