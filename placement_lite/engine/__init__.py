"""The allocation-candidates engine.

    query pairs --request.parse_query--> CandidateRequest
                --search.search--------> who can serve each group, per anchor
                --combine.Combiner-----> allocation requests, lazily
                --find_candidates------> the first N, and the summaries of
                                         the trees they touch

Groups are filtered by a few set-based queries each (``db.candidates``);
what the providers searched have and use is read once per request into a
``db.snapshot.Snapshot``, which also gives the parents same_subtree needs
and the summaries of the trees the returned requests touch. With
``limit``, trees are searched in windows, so ``limit`` bounds the work,
not only the output.
"""

import dataclasses
import itertools
import random

from placement_lite.db import candidates as db
from placement_lite.db import snapshot
from placement_lite.engine import combine
from placement_lite.engine import search
from placement_lite.engine.request import parse_query  # noqa: F401


@dataclasses.dataclass
class Candidates:
    #: combine.Candidate objects (providers by internal id).
    allocation_requests: list
    #: {provider id: uuid} for every provider they name.
    uuids: dict
    #: {provider id: snapshot.ProviderSummary} of the providers to show,
    #: in provider id order.
    provider_summaries: dict


EMPTY = Candidates([], {}, {})
#: The fewest trees a window searches (see _windows).
WINDOW_MIN = 64


def find_candidates(database, conf, request, nested_aware=True):
    """The allocation candidates for ``request`` (a CandidateRequest).

    ``nested_aware`` is False before microversion 1.29: requests taking
    resources from two providers of one tree are then left out, and
    summaries only show providers that give resources.

    Read from the replica when there is one: a claim made from a stale
    candidate is checked against the primary and refused, never applied.
    """
    placement = conf.placement
    bound = _bound(request.limit, placement.max_allocation_candidates)
    strategy = placement.allocation_candidates_generation_strategy
    rng = random.Random() if placement.randomize_allocation_candidates else (
        None)
    shuffle = rng.shuffle if rng else None
    with database.replica_reader() as conn:
        if bound is not None and nested_aware:
            return _find_spread(conn, request, bound, strategy, rng)
        try:
            found = search.search(conn, request)
        except search.NoCandidates:
            return EMPTY
        if not found.anchors:
            return EMPTY
        combiner = combine.Combiner(
            found, request, parents=found.snapshot.parents,
            nested_aware=nested_aware, shuffle=shuffle)
        generated = combiner.generate(strategy)
        chosen = list(itertools.islice(generated, bound))
        if not chosen:
            return EMPTY
        if shuffle:
            shuffle(chosen)
        if not nested_aware and db.has_provider_trees(conn):
            truncated = (bound is not None
                         and next(generated, None) is not None)
            shown = _legacy_summary_providers(combiner, chosen, truncated)
        else:
            shown = None
        return _with_summaries(conn, found.snapshot, found.roots, chosen,
                               shown)


def _find_spread(conn, request, bound, strategy, rng):
    """At most ``bound`` candidates, from as many trees as can serve the
    request: the first candidate of each tree, tree after tree, until
    ``bound`` trees gave one; only when fewer can are more taken from
    them (depth-first: all of the first tree's, then the next's;
    breadth-first: one more from each in turn).

    Trees are searched in windows (see _windows), so the work follows
    ``bound``, not the size of the cloud. With ``rng`` (a random.Random)
    the windows start at a tree picked at random, trees and choices are
    shuffled within each window, and so is the answer.
    """
    shuffle = rng.shuffle if rng else None
    try:
        searcher = search.Searcher(conn, request)
    except search.NoCandidates:
        return EMPTY
    seen = set()
    #: (first candidate, the tree's other candidates, lazily), by tree.
    trees = []
    roots = {}
    try:
        for window in _windows(conn, bound, rng):
            found = searcher.search(window)
            if found is None:
                continue
            roots.update(found.roots)
            combiner = combine.Combiner(found, request,
                                        parents=searcher.snapshot.parents,
                                        shuffle=shuffle, seen=seen)
            for anchor in combiner.anchors():
                others = combiner.for_anchor(anchor)
                first = next(others, None)
                if first is not None:
                    trees.append((first, others))
                    if len(trees) == bound:
                        break
            if len(trees) == bound:
                break
    except search.NoCandidates:
        return EMPTY
    if not searcher.all_groups_reached:
        # Some group was never searched, so its names were never checked:
        # the whole-cloud search reports them (or finds nothing either).
        try:
            search.search(conn, request)
        except search.NoCandidates:
            pass
        return EMPTY
    if not trees:
        return EMPTY
    chosen = _more_from_each_tree(trees, bound, strategy)
    if shuffle:
        shuffle(chosen)
    return _with_summaries(conn, searcher.snapshot, roots, chosen, None)


def _more_from_each_tree(trees, bound, strategy):
    """``bound`` candidates (or all there are) from ``trees``: each tree's
    first, then more as ``strategy`` orders them."""
    more = bound - len(trees)
    if strategy == 'breadth-first':
        firsts = [first for first, _others in trees]
        return firsts + list(itertools.islice(
            combine.round_robin(others for _first, others in trees), more))
    chosen = []
    for first, others in trees:
        chosen.append(first)
        if more:
            taken = list(itertools.islice(others, more))
            chosen.extend(taken)
            more -= len(taken)
    return chosen


def _windows(conn, bound, rng):
    """The windows of trees to search in turn (snapshot.Window), at first
    ``max(2 * bound, WINDOW_MIN)`` trees, twice as many each time; None
    for the whole cloud, when one window holds every tree (the unscoped
    queries search it faster). A window holding half the cloud or more is
    marked ``most_of_cloud``. With ``rng``, windows start at a tree picked
    at random and wrap around, so every tree is as likely to be searched
    first.
    """
    size = max(2 * bound, WINDOW_MIN)
    total = None
    segments = [(None, None)]
    if rng:
        total = db.root_count(conn)
        if total > size:
            start = db.nth_root(conn, rng.randrange(total))
            segments = [(start - 1, None), (None, start)]
    searched = 0
    for after, before in segments:
        while True:
            window = db.root_window(conn, after, size, before)
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
            yield snapshot.Window(window.first, window.last, half)
            after = window.last
            searched += window.trees
            size *= 2


def _bound(limit, max_candidates):
    bounds = [b for b in (limit, max_candidates)
              if b is not None and b >= 0]
    return min(bounds) if bounds else None


def _with_summaries(conn, providers_read, roots, chosen, shown):
    """``chosen`` with the uuids of the providers they name and the
    summaries of the trees they touch, from the Snapshot
    ``providers_read`` (``roots`` maps each provider to its root);
    ``shown`` limits the summaries (None: every provider of those
    trees)."""
    tree_roots = {roots[p] for c in chosen for p in c.allocations}
    summaries = providers_read.summaries(tree_roots)
    uuids = {p: summary.uuid for p, summary in summaries.items()}
    # Providers of resourceless groups may lie outside the trees shown.
    missing = {p for c in chosen for ps in c.mappings.values() for p in ps
               if p not in uuids}
    if missing:
        uuids.update(db.provider_uuids(conn, missing))
    if shown is not None:
        summaries = {p: summary for p, summary in summaries.items()
                     if p in shown}
    return Candidates(chosen, uuids, summaries)


def _legacy_summary_providers(combiner, chosen, truncated):
    """Before 1.29 summaries show the providers giving resources in any
    request the reference would have built, for the trees returned."""
    root_of = combiner.result.root_of
    tree_roots = {root_of(p) for c in chosen for p in c.allocations}
    shown = {p for c in chosen for p in c.allocations}
    if truncated:
        for anchor in sorted(set(combiner.result.anchors) & tree_roots):
            for candidate in combiner.for_anchor(anchor):
                shown.update(p for p in candidate.allocations
                             if root_of(p) in tree_roots)
    return shown
