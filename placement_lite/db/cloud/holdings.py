"""Who holds an inventory of one resource class, among the providers a
request looks at: gathered from the kept store into arrays of its own, so
that it stays as it was while the store is patched.

A Holdings is a mapping {provider id: reads.Capacity}, in provider id
order, for the engine; the filters a search applies to every holder
(room, units) and the pairs it makes run over the arrays, and a Capacity
is made only for a holder asked for by id.
"""

import collections.abc

import numpy as np

from placement_lite.db.cloud import reads

_new_tuple = tuple.__new__


def _new_capacity(values):
    # tuple.__new__: a third of the cost of Capacity(...).
    return _new_tuple(reads.Capacity, values)


def roots_by_id(holdings):
    """{provider id: root id} of the holders of each of ``holdings`` (a
    list of Holdings), made in one pass over their arrays."""
    if not holdings:
        return {}
    return dict(zip(np.concatenate([held.ids for held in holdings]).tolist(),
                    np.concatenate([held.roots for held in holdings]
                                   ).tolist()))


class Holdings(collections.abc.Mapping):
    """{provider id: reads.Capacity} of some holders of one class."""

    __slots__ = ('ids', 'roots', 'capacity', 'used', 'min_unit', 'max_unit',
                 'step_size', '_by_id', '_exact')

    def __init__(self, ids, roots, capacity, used, min_unit, max_unit,
                 step_size, exact=None):
        self.ids = ids
        self.roots = roots
        self.capacity = capacity
        self.used = used
        self.min_unit = min_unit
        self.max_unit = max_unit
        self.step_size = step_size
        #: {provider id: its exact capacity} where the store bounds it.
        self._exact = exact or {}
        #: {provider id: reads.Capacity}, made when first asked by id.
        self._by_id = None

    @classmethod
    def of_slots(cls, store, slots):
        """The holders of ``slots`` of ``store``, as they are now."""
        columns = store.slots
        rows = columns.row[slots]
        ids = store.rows.id[rows]
        exact = None
        if store.exact_capacities:
            big = np.fromiter(store.exact_capacities, np.int64,
                              len(store.exact_capacities))
            exact = {int(ids[at]): store.exact_capacities[int(slots[at])]
                     for at in np.flatnonzero(np.isin(slots, big)).tolist()}
        return cls(ids, store.rows.root[rows], columns.capacity[slots],
                   columns.used[slots], columns.min_unit[slots],
                   columns.max_unit[slots], columns.step_size[slots], exact)

    @classmethod
    def empty(cls):
        none = np.zeros(0, np.int64)
        return cls(none, none, none, none, none, none, none)

    def _where(self, kept):
        """The holders where ``kept`` (a boolean array) is true."""
        return Holdings(*(column[kept] for column in (
            self.ids, self.roots, self.capacity, self.used, self.min_unit,
            self.max_unit, self.step_size)), self._exact)

    def with_room(self, amount):
        """Those whose free capacity holds ``amount``."""
        return self._where(amount <= self.capacity - self.used)

    def within_units(self, amount):
        """Those whose min_unit, max_unit and step_size allow ``amount``."""
        return self._where((self.min_unit <= amount)
                           & (amount <= self.max_unit)
                           & (amount % self.step_size == 0))

    def union(self, other):
        """These holders and ``other``'s (of the same class), by id."""
        ids = np.concatenate((self.ids, other.ids))
        _unique, first = np.unique(ids, return_index=True)
        return Holdings(*(np.concatenate((mine, theirs))[first]
                          for mine, theirs in zip(
                              (self.ids, self.roots, self.capacity, self.used,
                               self.min_unit, self.max_unit, self.step_size),
                              (other.ids, other.roots, other.capacity,
                               other.used, other.min_unit, other.max_unit,
                               other.step_size))),
                        {**self._exact, **other._exact})

    def pairs(self):
        """[(provider id, root id), ...]."""
        return list(zip(self.ids.tolist(), self.roots.tolist()))

    def roots_of(self, provider_ids):
        """{provider id: root id} of those of ``provider_ids`` (a
        collection) held, without making every holder's Capacity."""
        held = np.isin(self.ids, np.fromiter(provider_ids, np.int64,
                                             len(provider_ids)))
        return dict(zip(self.ids[held].tolist(), self.roots[held].tolist()))

    def by_id(self):
        """{provider id: reads.Capacity}: made once, then shared (never
        change it)."""
        by_id = self._by_id
        if by_id is None:
            by_id = self._by_id = dict(zip(self.ids.tolist(), map(
                _new_capacity, zip(
                    self.roots.tolist(), self.capacity.tolist(),
                    self.used.tolist(), self.min_unit.tolist(),
                    self.max_unit.tolist(), self.step_size.tolist()))))
            for provider_id, capacity in self._exact.items():
                if provider_id in by_id:
                    by_id[provider_id] = by_id[provider_id]._replace(
                        capacity=capacity)
        return by_id

    def __len__(self):
        return len(self.ids)

    def __iter__(self):
        return iter(self.ids.tolist())

    def __contains__(self, provider_id):
        return provider_id in self.by_id()

    def __getitem__(self, provider_id):
        return self.by_id()[provider_id]

    def __repr__(self):
        return 'Holdings(%r)' % dict(self.items())
