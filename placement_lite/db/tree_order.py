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


def free_of_tree(read, orders, root_id):
    """(Free of each class of ``orders``, ...) in the tree ``root_id`` of
    ``read`` (a cloud.CloudRead)."""
    position = {rc_id: k for k, (rc_id, _sign) in enumerate(orders)}
    free = [0] * len(orders)
    providers, used = read.providers, read.used
    for provider_id in read.trees()[1].get(root_id, ()):
        uses = used.get(provider_id)
        for rc_id, capacity, *_units in providers[provider_id][2].inventories:
            k = position.get(rc_id)
            if k is not None:
                free[k] += capacity - (uses.get(rc_id, 0) if uses else 0)
    return tuple(free)


class TreeOrder:
    """Every tree of one read of the whole cloud, by key (see the
    module's docstring) for ``orders``: ((rc id, sign), ...)."""

    def __init__(self, read, orders):
        self.orders = orders
        roots = read.trees()[0]
        totals = {root_id: [0] * len(orders) for root_id in roots}
        for k, (rc_id, _sign) in enumerate(orders):
            for capacity in read.capacities([rc_id])[rc_id].values():
                totals[capacity.root_id][k] += capacity.capacity - (
                    capacity.used)
        #: {root id: its key}.
        self._keys = {root_id: self._key(free, root_id)
                      for root_id, free in totals.items()}
        self._sorted = SortedList(self._keys.values())
        # A patch (of a process's next read) may come while a request of
        # another thread walks this order.
        self._lock = threading.Lock()

    def _key(self, free, root_id):
        return (*(sign * amount for (_rc, sign), amount
                  in zip(self.orders, free)), root_id)

    def patched(self, read, root_ids):
        """This order, its trees ``root_ids`` moved to where ``read`` (the
        read patched from the one this order was made of) puts them."""
        roots = read.trees()[1]
        with self._lock:
            for root_id in root_ids:
                old = self._keys.pop(root_id, None)
                if old is not None:
                    self._sorted.remove(old)
                if root_id in roots:
                    key = self._keys[root_id] = self._key(
                        free_of_tree(read, self.orders, root_id), root_id)
                    self._sorted.add(key)
        return self

    def key_of(self, root_id):
        """The key of the tree ``root_id``; None for no tree of the read."""
        with self._lock:
            return self._keys.get(root_id)

    def after(self, key, count, first=None):
        """The next ``count`` (key, root id), in order, after ``key`` (None:
        from the start, or from the first key at least ``first``, a prefix
        of a key)."""
        with self._lock:
            if key is None:
                found = (self._sorted.irange(first) if first is not None
                         else iter(self._sorted))
            else:
                found = self._sorted.irange(key, inclusive=(False, True))
            return [(key, key[-1]) for key, _count in zip(found,
                                                           range(count))]
