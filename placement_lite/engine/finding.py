"""Finding a request's candidates: the path of every request the engine
answers (ranked ones are handed to engine/ranked.py).

    query pairs --request.parse_query----> CandidateRequest
                --question.Question------> what the answer depends on
                --search.Searcher--------> who can serve each group, per
                                           anchor, window by window
                                           (windows.py)
                --combine.Combiner-------> allocation requests, lazily
                --find_candidates--------> the first N, and the summaries
                                           of the trees they touch
                --explain.Tally----------> with explain (1.41), what each
                                           step kept, told by the steps

Groups are filtered by a few set-based lookups each; what the providers
searched have and use is read once per request through its
``db.cloud.View``, which also gives the parents same_subtree needs and
the summaries of the trees the returned requests touch. With ``limit``,
trees are searched in windows, so ``limit`` bounds the work, not only
the output.
"""

import contextlib
import dataclasses
import itertools
import random

from placement_lite import observe
from placement_lite.db import cloud
from placement_lite.engine import answer
from placement_lite.engine import combine
from placement_lite.engine import explain
from placement_lite.engine import question
from placement_lite.engine import rank_query
from placement_lite.engine import ranked
from placement_lite.engine import reuse
from placement_lite.engine import search
from placement_lite.engine import windows


@contextlib.contextmanager
def find_candidates(database, conf, request):
    """The allocation candidates for ``request`` (a CandidateRequest), as
    a context: the answer (answer.Candidates, or answer.Streamed) is read
    inside it.

    Before microversion 1.29 (``request.nested_aware`` false), requests
    taking resources from two providers of one tree are left out, and
    summaries only show providers that give resources.

    With a bound (``limit`` or max_allocation_candidates) from 1.29, trees
    are searched in windows and the candidates spread over as many trees
    as can serve (see _spread); otherwise the whole cloud is searched as
    one window and its candidates taken in strategy order. A ranked
    request (1.42, or any bounded one under ``[placement]
    allocation_candidates_rank_by``) is answered by engine/ranked.py.

    Read from the replica when there is one: a claim made from a stale
    candidate is checked against the primary and refused, never applied.

    With ``request.explain`` the answer carries an explain.Explanation;
    explain=<uuid> searches that provider's tree as the only window.

    An answer without a bound, in strategy order, is made as it is read
    (see answer.Streamed).
    """
    asked = question.Question(request, question.Options.of(conf))
    options = asked.options
    bound = asked.bound
    if request.ranking is not None:
        yield ranked.ranked_candidates(database, asked, request, bound)
        return
    server_order = rank_query.server_order(options.rank_by)
    if server_order is not None and bound is not None:
        yield ranked.ranked_candidates(
            database, asked, dataclasses.replace(request,
                                                 ranking=server_order),
            bound, by_server=True, leave_out_best=True)
        return
    nested_aware = request.nested_aware
    rng = random.Random() if options.randomize else None
    shuffle = rng.shuffle if rng else None
    spread = bound is not None and nested_aware
    tally = explain.Tally(request) if request.explain else (
        explain.NOT_TALLIED)
    found = answer.EMPTY
    with database.replica_reader() as conn:
        try:
            searcher = search.Searcher(conn, request, tally)
            view = searcher.view
            kept = reuse.kept_for(view, asked.key('first'), request, rng,
                                  tally) if spread else None
            first_window = windows.FirstWindow(view, asked) if spread else (
                None)
            if searcher.explained_root is not None:
                searched_windows = windows.explained_tree(
                    searcher.explained_root)
            elif spread:
                searched_windows = windows.windows_of_trees(
                    view, first_window.size(bound), rng, searcher, tally)
            else:
                searched_windows = windows.whole_cloud(searcher, tally)
            counted = windows.Counted()
            searched = _searched(searcher, request, searched_windows,
                                 shuffle, tally, counted,
                                 roomiest_first=spread)
            if bound is None and nested_aware and not (
                    shuffle or tally.active):
                yield _streamed(searcher, searched, options.strategy)
                return
            if spread:
                chosen, roots = _spread(searched, bound, options.strategy,
                                        kept)
                shown = None
                first_window.remember(counted)
            else:
                chosen, roots, shown = _in_strategy_order(
                    view, searched, bound, options.strategy, nested_aware)
            if bound is not None:
                tally.returned({candidate.anchor for candidate in chosen})
            if not searcher.all_groups_reached:
                searcher.check_unreached_names()
                chosen = []
        except search.NoCandidates:
            chosen = []
        if chosen:
            if shuffle:
                shuffle(chosen)
            found = answer.with_summaries(view, roots, chosen, shown,
                                          request)
    if tally.active:
        found = dataclasses.replace(found, explanation=tally.report())
    yield found


def warm_caches(database, rank_by=None):
    """Read the whole cloud once into what the process keeps between
    requests (db.cloud), the trees each sharing provider serves and,
    with ``rank_by`` (``[placement] allocation_candidates_rank_by``), the
    trees in the order of that key (db.cloud.orders): the first request
    searching every tree, or a window of them while nothing changes, then
    finds them kept, as later ones do. Returns the summaries of every
    provider (db.cloud.summaries.Shown), for the answers to render
    ahead."""
    with database.replica_reader() as conn:
        view = cloud.request_view(conn)
        summaries = view.read_whole_cloud()
        view.find_every_sharing_anchor()
        server_order = rank_query.server_order(rank_by)
        if server_order is not None:
            view.tree_order(server_order.free_terms(
                {name: id_ for id_, name in view.class_names.items()}
            )).warm()
        return summaries


def _searched(searcher, request, searched_windows, shuffle, tally, counted,
              roomiest_first=False):
    """(SearchResult, combine.Combiner) for each of ``searched_windows``
    (see windows) where every group can be served, in turn, lazily: the
    one driver of windowed and whole-cloud searches. A candidate found in
    one window is not given again by a later one. The trees of the
    windows searched are added up in ``counted`` (a windows.Counted).
    ``roomiest_first``: see combine."""
    seen = set()
    for window in searched_windows:
        if window is not None:
            observe.watcher.window_searched()
        found = searcher.search(window)
        if window is not None:
            counted.trees += window.trees
            counted.anchors += len(found.anchors) if found else 0
        if found is not None:
            yield found, combine.Combiner(
                found, request, parents=searcher.view.parents,
                shuffle=shuffle, seen=seen, tally=tally,
                roomiest_first=roomiest_first)


def _spread(searched, bound, strategy, kept=None):
    """(at most ``bound`` candidates, {provider id: root id}), from as many
    trees as can serve the request: the first candidate of each tree,
    tree after tree, until ``bound`` trees gave one; only when fewer can
    are more taken from them (depth-first: all of the first tree's, then
    the next's; breadth-first: one more from each in turn). A tree's
    first candidate is taken from ``kept`` (reuse.kept_for's) where it
    holds it.

    ``searched`` goes window by window (see windows), so the work follows
    ``bound``, not the size of the cloud. With randomized candidates the
    windows start at a tree picked at random, and trees and choices are
    shuffled within each window.
    """
    #: (first candidate, the tree's other candidates, lazily), by tree.
    trees = []
    roots = {}
    for found, combiner in searched:
        roots.update(found.roots)
        for anchor in combiner.anchors():
            first, others = reuse.first_and_others(combiner, anchor, kept)
            if first is not None:
                trees.append((first, others))
                if len(trees) == bound:
                    return _more_from_each_tree(trees, bound, strategy), roots
    return _more_from_each_tree(trees, bound, strategy), roots


def _streamed(searcher, searched, strategy):
    """The answer.Streamed of ``searched`` (the whole cloud as one window,
    searched here), or answer.EMPTY."""
    result, combiner = next(searched, (None, None))
    if not searcher.all_groups_reached:
        searcher.check_unreached_names()
        return answer.EMPTY
    if result is None:
        return answer.EMPTY
    return answer.Streamed(result, combiner.generate(strategy))


def _in_strategy_order(view, searched, bound, strategy, nested_aware):
    """(the first ``bound`` candidates in ``strategy`` order, {provider id:
    root id}, the providers summaries show or None for all) from
    ``searched``, the whole cloud as one window."""
    for found, combiner in searched:
        generated = combiner.generate(strategy)
        chosen = list(itertools.islice(generated, bound))
        shown = None
        if chosen and not nested_aware and view.has_provider_trees():
            truncated = (bound is not None
                         and next(generated, None) is not None)
            shown = answer.legacy_summary_providers([combiner], chosen,
                                                    truncated)
        return chosen, found.roots, shown
    return [], {}, None


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
