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
#: The fewest trees a window searches (see _find_in_windows).
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
    with database.replica_reader() as conn:
        if (bound is not None and strategy == 'depth-first' and nested_aware
                and not placement.randomize_allocation_candidates):
            return _find_in_windows(conn, request, bound)
        try:
            found = search.search(conn, request)
        except search.NoCandidates:
            return EMPTY
        if not found.anchors:
            return EMPTY
        shuffle = (random.Random().shuffle
                   if placement.randomize_allocation_candidates else None)
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


def _find_in_windows(conn, request, bound):
    """The first ``bound`` depth-first candidates, searching windows of
    trees in creation order (each twice the last) until enough are found,
    so the work follows ``bound``, not the size of the cloud."""
    try:
        searcher = search.Searcher(conn, request)
    except search.NoCandidates:
        return EMPTY
    seen = set()
    chosen = []
    roots = {}
    after = None
    searched = 0
    size = max(2 * bound, WINDOW_MIN)
    try:
        while len(chosen) < bound:
            window = db.root_window(conn, after, size)
            if window is None:
                break
            # A first window holding every tree is the whole cloud, which
            # the unscoped queries search faster.
            whole_cloud = after is None and window.is_final
            # A last window holding at least as many trees as all before it
            # is half the cloud or more: it is cut out of a read of the
            # whole cloud, which the process keeps between requests.
            most_of_cloud = window.is_final and window.trees >= searched
            after = window.last
            searched += window.trees
            size *= 2
            found = searcher.search(
                None if whole_cloud else (window.first, window.last),
                cut_from_cloud=most_of_cloud)
            if found is None:
                continue
            combiner = combine.Combiner(found, request,
                                        parents=searcher.snapshot.parents,
                                        seen=seen)
            chosen.extend(itertools.islice(combiner.generate(),
                                           bound - len(chosen)))
            roots.update(found.roots)
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
    if not chosen:
        return EMPTY
    return _with_summaries(conn, searcher.snapshot, roots, chosen, None)


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
