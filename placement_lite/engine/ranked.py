"""Ranked allocation candidates (microversion 1.42, and every bounded
request under ``[placement] allocation_candidates_rank_by``): the best
``limit`` candidates of the request by a documented, total key, not the
first ones found. The key and what each term means are defined in
api-ref/extensions.md; in short, for a candidate ``c`` under the tree
``t``, used alternatives ``a``::

    (a's rank in each alternatives set,
     -(preferred traits c has),
     round: how many candidates of t with as many preferred traits come
            before c by the order terms (then generation order),
     each rank_by term: -free (spread) or free (pack), where free is what
            the providers of t having the class keep free after c,
     t (the root id: creation order),
     c's index in t's generation order)

Two walks find them with bounded work, and equal the brute-force answer
(every candidate of every tree, sorted by the key, cut at ``limit``):
tests/test_ranked_candidates.py checks it on random worlds, with windows
of every size.

- A request keyed by its trees' free amounts alone walks the trees in the
  cloud's tree order, each tree's first candidate, then the second of
  each, and so on (in_tree_order.py).
- Any other walks the trees best bound first (best_first.py).

Alternatives: one search per choice of alternatives
(rank_query.alternative_requests). A tree uses the first choice under
which it has a candidate.
"""

import dataclasses

from placement_lite import errors
from placement_lite.engine import answer
from placement_lite.engine import best_first
from placement_lite.engine import dispersion
from placement_lite.engine import explain
from placement_lite.engine import in_tree_order
from placement_lite.engine import rank_keys
from placement_lite.engine import rank_query
from placement_lite.engine import reuse
from placement_lite.engine import search
from placement_lite.engine import windows


def ranked_candidates(database, asked, request, bound, by_server=False,
                      leave_out_best=False):
    """The answer.Candidates of ``request``, ranked, best first, for the
    question.Question ``asked`` (its request as the client sent it:
    ``request`` may rank by the server's order or a claim's): the best
    ``bound`` by the rank key, whatever the strategy and randomizing.

    ``by_server``: the ranking is the option's, whose classes that do not
    exist are left out (a request's own are refused), and a tree's
    candidates are generated roomiest choices first, as a bounded
    unranked request's are (api-ref/allocation_candidates.md): the first
    candidate of the host a scheduler picks takes from its roomiest
    providers.

    With ``[placement] allocation_candidates_dispersion`` the request
    takes its dispersion turn (engine.dispersion), its offset in the
    answer's ``offset``; with ``leave_out_best`` the answer leaves out
    every candidate of that many of the best trees (only a request ranked
    by free amounts alone leaves any out: in_tree_order).

    Before 1.29 (not ``request.nested_aware``) a candidate takes each
    class from one provider, and summaries show the providers giving
    resources."""
    options = asked.options
    tally = explain.Tally(request) if request.explain else (
        explain.NOT_TALLIED)
    found = answer.EMPTY
    walked = None
    offset = 0
    with database.replica_reader() as conn:
        try:
            alternatives = rank_query.alternative_requests(request)
            searchers = [search.Searcher(conn, alternative.request, tally)
                         for alternative in alternatives]
            view = searchers[0].view
            if options.dispersion:
                offset = dispersion.next_offset(
                    view, asked.key('dispersion'), options.dispersion,
                    options.dispersion_seed)
            left_out = offset if leave_out_best else 0
            first_window = None if bound is None else windows.FirstWindow(
                view, asked)
            counted = windows.Counted()
            walked = _walked(asked, request, alternatives, searchers, bound,
                             tally, by_server, left_out,
                             first_window and first_window.size(
                                 bound + left_out), counted)
            if first_window is not None:
                first_window.remember(counted)
        except search.NoCandidates:
            pass
        if walked is not None and walked.chosen:
            if bound is not None:
                tally.returned({c.anchor for c in walked.chosen})
            shown = None
            if not request.nested_aware and view.has_provider_trees():
                shown = answer.legacy_summary_providers(walked.combiners,
                                                        walked.chosen, True)
            found = answer.with_summaries(view, walked.roots, walked.chosen,
                                          shown, request)
    found = dataclasses.replace(found, offset=offset)
    if tally.active:
        found = dataclasses.replace(found, explanation=dataclasses.replace(
            tally.report(),
            ranking=walked.explained if walked
            else explain.RankExplanation(
                rank_keys.key_names(request.ranking), 0, [])))
    return found


def _walked(asked, request, alternatives, searchers, bound, tally, by_server,
            left_out, first_window, counted):
    """The walks.Ranked candidates of ``request`` (with a
    rank_query.Ranking) for ``asked``, at most ``bound`` (None: all of
    them), from ``searchers`` (a search.Searcher of each of
    ``alternatives``, rank_query.alternative_requests of ``request``);
    raises errors.BadRequest and search.NoCandidates as the search does.
    ``left_out``: see in_tree_order. With a bound, trees are searched in
    windows, the first of ``first_window`` trees, and ``counted`` (a
    windows.Counted) adds the trees they held and those that could
    serve."""
    roomiest_first = by_server and request.nested_aware
    if by_server:
        # The server's order: classes only (what the search reads of the
        # request's ranking is its trait names), no alternatives.
        request = dataclasses.replace(request, ranking=_known_classes_only(
            searchers[0].names, request.ranking))
        alternatives = rank_query.alternative_requests(request)
    else:
        _check_names(searchers[0].names, request.ranking)
    if bound is not None and not tally.active and _keyed_by_free_only(
            request):
        searcher, = searchers
        walked = in_tree_order.ranked(
            searcher, request, bound, roomiest_first, left_out,
            first_window, counted,
            reuse.kept_for(searcher.view, asked.key('first in tree order'),
                           request, None, tally))
        if walked is not None:
            return walked
    return best_first.BestFirstWalk(
        asked, request, alternatives, searchers, bound, tally,
        roomiest_first, first_window, counted).ranked()


def _keyed_by_free_only(request):
    """Whether the key of ``request``'s candidates comes down to its
    tree's free amounts (rank_by alone: no alternatives or preferred
    traits), for every tree of the cloud (no group is kept to a tree by
    in_tree)."""
    rank_by = request.ranking
    return (rank_by.orders and not rank_by.alternatives
            and not rank_by.trait_names
            and not any(group.in_tree for group in request.groups.values()))


def _known_classes_only(names, rank_by):
    """``rank_by`` without the orders of classes that do not exist, by
    what the search looked up (search._Names ``names``)."""
    return dataclasses.replace(rank_by, orders=tuple(
        order for order in rank_by.orders
        if order.resource_class in names.class_ids))


def _check_names(names, rank_by):
    """400 for a class of rank_by or a preferred trait that does not
    exist, by what the search looked up (search._Names ``names``: every
    class, and the traits the request names, those of ``rank_by``
    included)."""
    for order in rank_by.orders:
        if order.resource_class not in names.class_ids:
            raise errors.BadRequest(
                'Invalid resource class in rank_by parameter: No such '
                'resource class %s.' % order.resource_class)
    missing = sorted(rank_by.trait_names - set(names.known.trait_ids))
    if missing:
        raise errors.BadRequest('No such trait(s): %s.' % ', '.join(missing))
