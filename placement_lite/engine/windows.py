"""Windows: the trees a bounded search reads in turn, so that ``limit``
bounds its work, not the size of the cloud.

A window is a run of trees in creation order (cloud.Window), or the
trees of some roots. The first holds enough trees for ``limit`` trees
able to serve at the rate the last search of the same question found
them (its *window rate*, kept by the Cloud: FirstWindow), each next one
twice as many as the last. Any size gives the same answer: a window too
small costs one more, one too large reads what is not needed.
"""

import dataclasses
import math

from placement_lite.db import cloud

#: The fewest trees a window searches.
WINDOW_MIN = 64
#: A first window holds this many times the trees the last search of the
#: same question needed for ``limit`` trees able to serve (see
#: FirstWindow).
WINDOW_MARGIN = 1.25


@dataclasses.dataclass
class Counted:
    """What the windows searched so far held."""

    trees: int = 0
    #: Trees where every group could be served.
    anchors: int = 0


class FirstWindow:
    """How many trees the first window of a question holds, from its
    window rate: how many trees its last windowed search read per tree
    able to serve (kept by the Cloud, by the question's keys.Key)."""

    def __init__(self, view, asked):
        """``view``: the request's cloud.View; ``asked``: its
        question.Question."""
        self._view = view
        self._key = asked.key('window rate')

    def size(self, bound):
        """How many trees the first window holds: enough for ``bound``
        trees able to serve at the rate the last search of this question
        found them, with WINDOW_MARGIN; never searched, twice ``bound``."""
        trees_per_anchor = self._view.window_rate(self._key)
        if trees_per_anchor is None:
            return max(2 * bound, WINDOW_MIN)
        return max(WINDOW_MIN,
                   math.ceil(bound * trees_per_anchor * WINDOW_MARGIN))

    def remember(self, counted):
        """Keep the rate of trees able to serve ``counted`` (a Counted)
        for the next search of this question."""
        if counted.anchors:
            self._view.keep_window_rate(self._key,
                                        counted.trees / counted.anchors)


def windows_of_trees(view, size, rng, searcher, tally):
    """The windows of trees to search in turn (cloud.Window), at first
    ``size`` trees (see FirstWindow), twice as many each time; None for
    the whole cloud, when one window holds every tree (the unscoped
    queries search it faster). A window holding half the cloud or more
    is marked ``most_of_cloud``. With ``rng``, windows start at a tree
    picked at random and wrap around, so every tree is as likely to be
    searched first.

    When only a few trees could serve (the searcher's few_trees), only
    they are searched, in windows of those trees (explain, which counts
    what each step kept among every tree, searches them all).
    """
    few = None if tally.active else searcher.few_trees()
    if few is not None:
        yield from _windows_of_few(few, size, rng)
        return
    total = None
    segments = [(None, None)]
    if rng:
        total = view.root_count()
        if total > size:
            start = view.nth_root(rng.randrange(total))
            segments = [(start - 1, None), (None, start)]
    searched = 0
    for after, before in segments:
        while True:
            window = view.root_window(after, size, before)
            if window is None:
                break
            if searched == 0 and window.is_final and before is None and (
                    after is None):
                yield None
                return
            if total is None:
                half = window.is_final and window.trees >= searched
            else:
                half = 2 * window.trees >= total
            yield cloud.Window(window.first, window.last, half,
                               trees=window.trees)
            after = window.last
            searched += window.trees
            size *= 2


def whole_cloud(searcher, tally):
    """The one window of a search without a bound: the trees that could
    serve when the request's own filters (member_of, root_required) leave
    only a few (the searcher's few_trees, reading nothing more for it),
    else None, every tree. (Explain, which counts what each step kept
    among every tree, searches them all.)"""
    few = None if tally.active else searcher.few_trees(read_holders=False)
    if few is None:
        yield None
    elif few:
        yield cloud.Window.of_roots(few)


def explained_tree(root_id):
    """The one window of explain=<uuid>: that provider's tree."""
    return (cloud.Window(root_id, root_id, False),)


def _windows_of_few(roots, size, rng):
    """Windows of the trees ``roots`` (sorted root ids), in order from a
    tree picked at random with ``rng``, ``size`` trees at first and twice
    as many each time."""
    if rng and roots:
        start = rng.randrange(len(roots))
        roots = roots[start:] + roots[:start]
    while roots:
        yield cloud.Window.of_roots(roots[:size])
        roots = roots[size:]
        size *= 2
