"""The key of everything a process keeps for a request: made in one place
from the whole question, so that no kept thing can be keyed by less than
its answer depends on.

A :class:`Key` is made only by :meth:`Key.of` from a question (the
engine's ``engine.question.Question``: the request as parsed at its
microversion and the server's options, its ``text``) and a purpose (what
is kept: a tree's first candidate on one path of the engine, a window
rate, a dispersion turn), and the ``part`` of the question it is for
(the choice of alternatives, say). Every cache of the Cloud keyed by
request takes a Key and refuses anything else, so a key cannot be
assembled by hand at the site that keeps something.
"""

import typing


class Key(typing.NamedTuple):
    """What one kept thing of one question is for (see the module's
    docstring)."""

    purpose: str
    part: typing.Hashable
    question: str

    @classmethod
    def of(cls, question, purpose, part=None):
        """The Key of ``question`` (anything with the text of everything
        its answer depends on, ``question.text``) for ``purpose``."""
        return cls(purpose, part, question.text)


def checked(key):
    """``key``, if it is a Key; else TypeError."""
    if type(key) is not Key:
        raise TypeError('kept things are keyed by keys.Key, not %r'
                        % type(key).__name__)
    return key


class ByKey:
    """What a process keeps by Key (and, for a key, by part), the
    ``most`` given last: the least recently given goes first."""

    def __init__(self, most, lock):
        self.most = most
        self.lock = lock
        #: {(Key, part): value}, the least recently given first.
        self._kept = {}

    def get(self, key, part=None):
        """What is kept for ``key`` (and ``part``), now the most recently
        given; None for nothing."""
        entry = (checked(key), part)
        with self.lock:
            value = self._kept.pop(entry, None)
            if value is not None:
                self._kept[entry] = value
        return value

    def put(self, key, value, part=None):
        """Keep ``value`` for ``key`` (and ``part``)."""
        entry = (checked(key), part)
        with self.lock:
            kept = self._kept
            kept.pop(entry, None)
            if len(kept) >= self.most:
                del kept[next(iter(kept))]
            kept[entry] = value

    def clear(self):
        with self.lock:
            self._kept.clear()

    def entries(self):
        """[((Key, part), value)] of what is kept, the least recently
        given first."""
        with self.lock:
            return list(self._kept.items())

    def __len__(self):
        return len(self._kept)
