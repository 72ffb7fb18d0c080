"""Same-length numpy columns that grow: the rows of the kept cloud.

A column grown is a new array, the old one left as it was: a request
that took a column keeps reading what it took. Values are changed in
place where a patch changes them (a provider's usage, its generation).
"""

import numpy as np

#: The fewest rows a column is given room for.
MIN_ROOM = 1024


class Columns:
    """Columns of one dtype each, ``size`` rows in use of their length."""

    def __init__(self, **dtypes):
        self._dtypes = dtypes
        self.size = 0
        for name, dtype in dtypes.items():
            setattr(self, name, np.zeros(0, dtype))

    @property
    def room(self):
        return len(getattr(self, next(iter(self._dtypes))))

    def add(self, count):
        """Room for ``count`` more rows; the index of the first."""
        first = self.size
        needed = first + count
        if needed > self.room:
            # Room to spare: rows added after a fork then go into pages
            # the worker writes anyway (zeros the system has not given
            # yet), not into a copy of every column.
            room = max(needed + needed // 4, 2 * self.room, MIN_ROOM)
            for name, dtype in self._dtypes.items():
                grown = np.zeros(room, dtype)
                grown[:first] = getattr(self, name)[:first]
                setattr(self, name, grown)
        self.size = needed
        return first

    def compacted(self, kept):
        """New columns holding only the rows ``kept`` (indexes, in order)."""
        made = Columns(**self._dtypes)
        made.add(len(kept))
        for name in self._dtypes:
            getattr(made, name)[:len(kept)] = getattr(self, name)[kept]
        return made

    def nbytes(self):
        return sum(getattr(self, name).nbytes for name in self._dtypes)
