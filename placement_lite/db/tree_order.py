"""The trees of a whole-cloud read in the order of what they keep free of
some resource classes: how a ranked request finds the best trees of the
cloud without searching every one (engine/ranked_search.py).

For the classes of a rank key, a tree's *free* amount of each is the sum,
over its providers having an inventory of the class, of capacity less
usage; its key is ``(sign x free of each class, ..., root id)``, the sign
-1 to put the most free first (spread), +1 the least (pack). The trees
are kept sorted by key (sortedcontainers). A read of the whole cloud
patched from the last one (db.cloud) takes the last one's orders along
and moves only the trees whose providers or usage changed: a cloud
taking claims pays for the trees the claims touched, not for every tree.
"""

import threading

from sortedcontainers import SortedList


def free_of_tree(read, root_id):
    """{rc id: (what the tree ``root_id`` of ``read`` (a cloud.CloudRead)
    keeps free of the class, the most one of its providers keeps)} for
    every class the tree holds."""
    held = {}
    providers, used = read.providers, read.used
    for provider_id in read.trees()[1].get(root_id, ()):
        uses = used.get(provider_id)
        for rc_id, capacity, *_units in providers[provider_id][2].inventories:
            kept = capacity - (uses.get(rc_id, 0) if uses else 0)
            free, most = held.get(rc_id, (0, kept))
            held[rc_id] = (free + kept, max(most, kept))
    return held


class TreeOrder:
    """Every tree of one read of the whole cloud, by key (see the
    module's docstring) for ``orders``: ((rc id, sign), ...), and what
    each tree keeps free of every class it holds."""

    def __init__(self, read, orders):
        self.orders = orders
        #: {root id: free_of_tree}.
        self._held = {root_id: free_of_tree(read, root_id)
                      for root_id in read.trees()[0]}
        #: {root id: its key}.
        self._keys = {root_id: self._key(held, root_id)
                      for root_id, held in self._held.items()}
        self._sorted = SortedList(self._keys.values())
        # A patch (of a process's next read) may come while a request of
        # another thread walks this order.
        self._lock = threading.Lock()

    def _key(self, held, root_id):
        return (*(sign * held.get(rc_id, (0, 0))[0]
                  for rc_id, sign in self.orders), root_id)

    def patched(self, read, root_ids):
        """This order, its trees ``root_ids`` moved to where ``read`` (the
        read patched from the one this order was made of) puts them."""
        roots = read.trees()[1]
        with self._lock:
            for root_id in root_ids:
                old = self._keys.pop(root_id, None)
                self._held.pop(root_id, None)
                if old is not None:
                    self._sorted.remove(old)
                if root_id in roots:
                    held = self._held[root_id] = free_of_tree(read, root_id)
                    key = self._keys[root_id] = self._key(held, root_id)
                    self._sorted.add(key)
        return self

    def key_of(self, root_id):
        """The key of the tree ``root_id``; None for no tree of the read."""
        with self._lock:
            return self._keys.get(root_id)

    def holds(self, root_id, asked):
        """Whether the tree ``root_id`` keeps free what ``asked`` ({rc id:
        (amount in all, the most one group asks)}) needs: as much in all,
        and the most a group asks on one provider."""
        with self._lock:
            return _holds(self._held[root_id], asked)

    def after(self, key, count, asked, lowest=None, highest=None):
        """(The next ``count`` (key, root id), in order, of the trees
        keeping free what ``asked`` needs (see holds), after ``key`` (None:
        from the start), of those whose key lies between ``lowest`` and
        ``highest`` (None: no bound); the last key looked at, None when
        there is no more)."""
        found = []
        last = None
        with self._lock:
            if key is None:
                keys = self._sorted.irange(lowest, highest)
            else:
                keys = self._sorted.irange(key, highest,
                                           inclusive=(False, True))
            held = self._held
            for last in keys:
                if _holds(held[last[-1]], asked):
                    found.append((last, last[-1]))
                    if len(found) == count:
                        break
        return found, last


def _holds(held, asked):
    for rc_id, (amount, of_one) in asked.items():
        free, most = held.get(rc_id, (0, 0))
        if free < amount or most < of_one:
            return False
    return True
