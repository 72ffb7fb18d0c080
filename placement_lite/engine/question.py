"""A question: everything a candidates answer depends on but the cloud.

It is the request as parsed at its microversion (engine.request: the
groups and every parameter, and the microversion whose rules it was
parsed under, which also decide what the engine does with it: before
1.29 a candidate takes each class from one provider of a tree), the
server's options that shape answers (:class:`Options`), and whether a
claim asks it (a claim ranks where a candidates request does not). Its
``text`` names all of that but ``limit`` (whether there is a bound
counts; how large it is changes no tree's first candidate, window rate
or dispersion turn), and the Key of everything a process keeps for it is
made from it, in db.cloud.keys: a field added to the request or the
options is in every key at once.
"""

import dataclasses
import functools
import typing

from placement_lite.db import cloud


@dataclasses.dataclass(frozen=True)
class Options:
    """The server's options a candidates answer depends on."""

    rank_by: typing.Optional[str]
    dispersion: int
    dispersion_seed: typing.Optional[int]
    max_candidates: int
    strategy: str
    randomize: bool
    extensions: bool

    @classmethod
    def of(cls, conf):
        placement = conf.placement
        return cls(placement.allocation_candidates_rank_by,
                   placement.allocation_candidates_dispersion,
                   placement.allocation_candidates_dispersion_seed,
                   placement.max_allocation_candidates,
                   placement.allocation_candidates_generation_strategy,
                   placement.randomize_allocation_candidates,
                   conf.api.enable_extensions)

    def bound(self, limit):
        """The most candidates an answer to a request with ``limit``
        holds, or None."""
        bounds = [b for b in (limit, self.max_candidates)
                  if b is not None and b >= 0]
        return min(bounds) if bounds else None


@dataclasses.dataclass(frozen=True)
class Question:
    """A request (engine.request.CandidateRequest), as the client sent it,
    the server's Options, and whether a claim asks it."""

    request: object
    options: Options
    for_claim: bool = False

    @functools.cached_property
    def text(self):
        """Everything the answer depends on but the cloud, as text (see
        the module's docstring)."""
        return repr((dataclasses.replace(self.request, limit=None),
                     self.bound is not None, self.options, self.for_claim))

    @functools.cached_property
    def bound(self):
        return self.options.bound(self.request.limit)

    def key(self, purpose, part=None):
        """The cloud.Key of what is kept of this question for
        ``purpose``."""
        return cloud.Key.of(self, purpose, part)
