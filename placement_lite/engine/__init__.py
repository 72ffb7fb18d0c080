"""The allocation-candidates engine.

    query pairs --request.parse_query--> CandidateRequest
                --search.Searcher------> who can serve each group, per anchor,
                                         window by window
                --combine.Combiner-----> allocation requests, lazily
                --find_candidates------> the first N, and the summaries of
                                         the trees they touch
                --explain.Tally--------> with explain (1.41), what each step
                                         kept, told by the steps themselves

Groups are filtered by a few set-based queries each (``db.candidates``);
what the providers searched have and use is read once per request into a
``db.snapshot.Snapshot``, which also gives the parents same_subtree needs
and the summaries of the trees the returned requests touch. With
``limit``, trees are searched in windows, so ``limit`` bounds the work,
not only the output.
"""

import contextlib
import dataclasses
import itertools
import math
import random
import weakref

from placement_lite import observe
from placement_lite.db import candidates as db
from placement_lite.db import cloud
from placement_lite.db import snapshot
from placement_lite.db.cloud import reads
from placement_lite.engine import combine
from placement_lite.engine import dispersion
from placement_lite.engine import explain
from placement_lite.engine import question
from placement_lite.engine import ranked_search
from placement_lite.engine import rank_query
from placement_lite.engine import reuse
from placement_lite.engine import search
from placement_lite.engine.request import parse_query  # noqa: F401


@dataclasses.dataclass
class Candidates:
    #: combine.Candidate objects (providers by internal id).
    allocation_requests: list
    #: {provider id: uuid} for every provider they name.
    uuids: dict
    #: cloud.summaries.Shown: the providers to show, in provider id
    #: order.
    provider_summaries: object
    #: How many trees had a provider for some group, in the windows
    #: searched (what the request log reports as trees searched).
    trees: int = 0
    #: explain.Explanation, with explain.
    explanation: explain.Explanation = None

    @property
    def count(self):
        return len(self.allocation_requests)


class Streamed:
    """The Candidates of an answer without a bound, its allocation
    requests made as they are read, once, inside find_candidates' context
    (same_subtree may read parents on the way): an answer of tens of
    thousands of candidates never holds them all, and a candidate's
    memory is used again by the next. provider_summaries shows the trees
    they touched, once they are all read."""

    explanation = None

    def __init__(self, result, generated):
        """``generated``: the candidates of ``result`` (a
        search.SearchResult), lazily."""
        self._result = result
        self._generated = generated
        #: {provider id: uuid} of every provider a candidate may name.
        self.uuids = result.snapshot.summaries(result.trees_named()).uuids()
        self.trees = len(set(result.roots.values()))
        #: How many candidates were read.
        self.count = 0
        #: The providers giving resources in the candidates read.
        self._giving = set()

    @property
    def allocation_requests(self):
        giving = self._giving
        for candidate in self._generated:
            self.count += 1
            giving.update(candidate.allocations)
            yield candidate

    @property
    def provider_summaries(self):
        roots = self._result.roots
        return self._result.snapshot.summaries(
            {roots[p] for p in self._giving})


EMPTY = Candidates([], {}, {})
#: The fewest trees a window searches (see _windows).
WINDOW_MIN = 64
#: A first window holds this many times the trees the last search of the
#: same request needed for ``limit`` trees able to serve (see
#: _Shape.first_window).
WINDOW_MARGIN = 1.25
#: Request shapes whose last window searches are remembered, per database.
SHAPES_KEPT = 512
#: {engine: {request shape: trees searched per tree where every group
#: could be served}}, from the last windowed search of each shape.
_TREES_PER_ANCHOR = weakref.WeakKeyDictionary()


@contextlib.contextmanager
def find_candidates(database, conf, request):
    """The allocation candidates for ``request`` (a CandidateRequest), as
    a context: the answer (Candidates, or Streamed) is read inside it.

    Before microversion 1.29 (``request.nested_aware`` false), requests
    taking resources from two providers of one tree are left out, and
    summaries only show providers that give resources.

    With a bound (``limit`` or max_allocation_candidates) from 1.29, trees
    are searched in windows and the candidates spread over as many trees
    as can serve (see _spread); otherwise the whole cloud is searched as
    one window and its candidates taken in strategy order.

    Read from the replica when there is one: a claim made from a stale
    candidate is checked against the primary and refused, never applied.

    With ``request.explain`` the answer carries an explain.Explanation;
    explain=<uuid> searches that provider's tree as the only window.

    An answer without a bound, in strategy order, is made as it is read
    (see Streamed).
    """
    asked = question.Question(request, question.Options.of(conf))
    options = asked.options
    bound = asked.bound
    nested_aware = request.nested_aware
    strategy = options.strategy
    rng = random.Random() if options.randomize else None
    shuffle = rng.shuffle if rng else None
    if request.ranking is not None:
        yield _ranked(database, asked, request, bound)
        return
    server_order = rank_query.server_order(options.rank_by)
    if server_order is not None and bound is not None:
        yield _ranked(database, asked, dataclasses.replace(
            request, ranking=server_order), bound, by_server=True,
            dispersed=_Dispersion(options) if options.dispersion else None)
        return
    spread = bound is not None and nested_aware
    tally = explain.Tally(request) if request.explain else (
        explain.NOT_TALLIED)
    found = EMPTY
    with database.replica_reader() as conn:
        # Before the search reads anything (see reuse.Kept).
        kept = reuse.kept_for(cloud.of(conn.engine), asked.key('first'),
                              request, rng, tally) if spread else None
        try:
            searcher = search.Searcher(conn, request, tally)
            shape = _Shape(conn.engine, asked) if spread else None
            if searcher.explained_root is None:
                windows = _windows(conn, shape.first_window(bound), rng,
                                   searcher, tally) if spread else (
                                       _whole_cloud(searcher, tally))
            else:
                windows = (snapshot.Window(searcher.explained_root,
                                           searcher.explained_root, False),)
            counted = _Counted()
            searched = _searched(searcher, request, windows, nested_aware,
                                 shuffle, tally, counted,
                                 roomiest_first=spread)
            if bound is None and nested_aware and not (
                    shuffle or tally.active):
                yield _streamed(searcher, searched, strategy)
                return
            if spread:
                chosen, roots = _spread(searched, bound, strategy, kept)
                shown = None
                shape.remember(counted)
            else:
                chosen, roots, shown = _in_strategy_order(
                    conn, searched, bound, strategy, nested_aware)
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
            found = _with_summaries(conn, searcher.snapshot, roots, chosen,
                                    shown, request)
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
        known = db.read_known(conn, (), (), (), ())
        read = snapshot.Snapshot(conn, known.class_names,
                                 known.transactions_seen)
        summaries = read.read_whole_cloud()
        db.find_every_sharing_anchor(
            conn, reads.derived_current(conn, read.store))
        server_order = rank_query.server_order(rank_by)
        if server_order is not None:
            read.tree_order(server_order.free_terms(
                {name: id_ for id_, name in known.class_names.items()}
            )).warm()
        return summaries


@dataclasses.dataclass
class _Counted:
    """What the windows searched so far held."""

    trees: int = 0
    #: Trees where every group could be served.
    anchors: int = 0


def _searched(searcher, request, windows, nested_aware, shuffle, tally,
              counted, roomiest_first=False):
    """(SearchResult, combine.Combiner) for each of ``windows`` (see
    _windows) where every group can be served, in turn, lazily: the one
    driver of windowed and whole-cloud searches. A candidate found in one
    window is not given again by a later one. The trees of the windows
    searched are added up in ``counted`` (a _Counted). ``roomiest_first``:
    see combine."""
    seen = set()
    for window in windows:
        if window is not None:
            observe.watcher.window_searched()
        found = searcher.search(window)
        if window is not None:
            counted.trees += window.trees
            counted.anchors += len(found.anchors) if found else 0
        if found is not None:
            yield found, combine.Combiner(
                found, request, parents=searcher.snapshot.parents,
                nested_aware=nested_aware, shuffle=shuffle, seen=seen,
                tally=tally, roomiest_first=roomiest_first)


def _spread(searched, bound, strategy, kept=None):
    """(at most ``bound`` candidates, {provider id: root id}), from as many
    trees as can serve the request: the first candidate of each tree,
    tree after tree, until ``bound`` trees gave one; only when fewer can
    are more taken from them (depth-first: all of the first tree's, then
    the next's; breadth-first: one more from each in turn). A tree's
    first candidate is taken from ``kept`` (a reuse.Kept) where it holds
    it.

    ``searched`` goes window by window (see _windows), so the work follows
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
    """The Streamed answer of ``searched`` (the whole cloud as one window,
    searched here), or EMPTY."""
    result, combiner = next(searched, (None, None))
    if not searcher.all_groups_reached:
        searcher.check_unreached_names()
        return EMPTY
    if result is None:
        return EMPTY
    return Streamed(result, combiner.generate(strategy))


def _in_strategy_order(conn, searched, bound, strategy, nested_aware):
    """(the first ``bound`` candidates in ``strategy`` order, {provider id:
    root id}, the providers summaries show or None for all) from
    ``searched``, the whole cloud as one window."""
    for found, combiner in searched:
        generated = combiner.generate(strategy)
        chosen = list(itertools.islice(generated, bound))
        shown = None
        if chosen and not nested_aware and db.has_provider_trees(conn):
            truncated = (bound is not None
                         and next(generated, None) is not None)
            shown = _legacy_summary_providers([combiner], chosen, truncated)
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


class _Shape:
    """A request's shape (the request but for its limit), and how many
    trees the last windowed search of that shape read per tree able to
    serve, kept per database (the SHAPES_KEPT shapes searched last)."""

    def __init__(self, engine, asked):
        self._kept = _TREES_PER_ANCHOR.setdefault(engine, {})
        self._key = asked.key('window rate')

    def first_window(self, bound):
        """How many trees the first window holds: enough for ``bound``
        trees able to serve at the rate the last search of this shape
        found them, with WINDOW_MARGIN; never searched, twice ``bound``.
        (Any size gives the same answer, a window too small costs one
        more, a window too large reads what is not needed.)"""
        trees_per_anchor = self._kept.get(self._key)
        if trees_per_anchor is None:
            return max(2 * bound, WINDOW_MIN)
        return max(WINDOW_MIN,
                   math.ceil(bound * trees_per_anchor * WINDOW_MARGIN))

    def remember(self, counted):
        """Keep the rate of trees able to serve ``counted`` (a _Counted)
        for the next search of this shape."""
        if not counted.anchors:
            return
        kept = self._kept
        kept.pop(self._key, None)
        kept[self._key] = counted.trees / counted.anchors
        if len(kept) > SHAPES_KEPT:
            del kept[next(iter(kept))]


def _windows(conn, size, rng, searcher, tally):
    """The windows of trees to search in turn (snapshot.Window), at first
    ``size`` trees (see _Shape.first_window), twice as many each time;
    None for the whole cloud, when one window holds every tree (the
    unscoped queries search it faster). A window holding half the cloud or more is
    marked ``most_of_cloud``. With ``rng``, windows start at a tree picked
    at random and wrap around, so every tree is as likely to be searched
    first.

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
            yield snapshot.Window(window.first, window.last, half,
                                  trees=window.trees)
            after = window.last
            searched += window.trees
            size *= 2


def _whole_cloud(searcher, tally):
    """The one window of a search without a bound: the trees that could
    serve when the request's own filters (member_of, root_required) leave
    only a few (the searcher's few_trees, reading nothing more for it),
    else None, every tree. (Explain, which counts what each step kept
    among every tree, searches them all.)"""
    few = None if tally.active else searcher.few_trees(read_holders=False)
    if few is None:
        yield None
    elif few:
        yield snapshot.Window.of_roots(few)


def _windows_of_few(roots, size, rng):
    """Windows of the trees ``roots`` (sorted root ids), in order from a
    tree picked at random with ``rng``, ``size`` trees at first and twice
    as many each time."""
    if rng and roots:
        start = rng.randrange(len(roots))
        roots = roots[start:] + roots[:start]
    while roots:
        yield snapshot.Window.of_roots(roots[:size])
        roots = roots[size:]
        size *= 2


def _with_summaries(conn, providers_read, roots, chosen, shown, request):
    """``chosen`` with the uuids of the providers they name and the
    summaries of the trees they touch, from the Snapshot
    ``providers_read`` (``roots`` maps each provider to its root);
    ``shown`` limits the summaries (None: every provider of those
    trees)."""
    # (Candidates share their dicts: their keys are joined in one pass.)
    tree_roots = {roots[p] for p in set().union(
        *(c.allocations for c in chosen))}
    summaries = providers_read.summaries(tree_roots)
    uuids = summaries.uuids()
    if any(not group.resources for group in request.groups.values()):
        # Providers of resourceless groups may lie outside the trees shown
        # (every other provider a mapping names gives resources).
        missing = {p for c in chosen for ps in c.mappings.values()
                   for p in ps if p not in uuids}
        if missing:
            uuids.update(db.provider_uuids(conn, missing))
    if shown is not None:
        summaries = summaries.only(shown)
    return Candidates(chosen, uuids, summaries,
                      trees=len(set(roots.values())))


def _legacy_summary_providers(combiners, chosen, truncated):
    """Before 1.29 summaries show the providers giving resources in any
    request the reference would have built, for the trees returned (the
    ``combiners`` of every window searched)."""
    roots = {}
    for combiner in combiners:
        roots.update(combiner.result.roots)
    tree_roots = {roots[p] for c in chosen for p in c.allocations}
    shown = {p for c in chosen for p in c.allocations}
    if truncated:
        for combiner in combiners:
            for anchor in sorted(set(combiner.result.anchors) & tree_roots):
                for candidate in combiner.for_anchor(anchor):
                    shown.update(p for p in candidate.allocations
                                 if roots[p] in tree_roots)
    return shown


@dataclasses.dataclass
class ClaimOrder:
    """The candidates a claim tries (microversion 1.43, domain/claims.py)."""

    #: Candidates, best first by the rank key.
    found: Candidates
    #: The index of the candidate the claim's walk starts at (dispersion).
    start: int


def claim_order(database, conf, request, bound):
    """The best ``bound`` candidates of ``request`` for a claim, best
    first, and where the claim's walk starts.

    The key is the request's rank_by; without one, ``[placement]
    allocation_candidates_rank_by``, else spread on every class the
    request asks for, in the order asked (claim_rank_by). With ``[placement]
    allocation_candidates_dispersion`` the walk starts at the offset the
    request's shape has its turn at (engine.dispersion), as a ranked
    answer would; the candidates before it are not left out but tried
    last. With ``request.explain`` the answer carries the explanation."""
    asked = question.Question(request, question.Options.of(conf),
                              for_claim=True)
    options = asked.options
    own = request.ranking is not None and request.ranking.orders
    if not own:
        server_order = rank_query.server_order(options.rank_by)
        orders = (server_order or claim_rank_by(request)).orders
        request = dataclasses.replace(request, ranking=dataclasses.replace(
            request.ranking or rank_query.Ranking(), orders=orders))
    found = _ranked(database, asked, request, bound, by_server=not own)
    start = 0
    if options.dispersion and found.allocation_requests:
        start = _Dispersion(options).offset(
            database.replica_engine, asked) % len(found.allocation_requests)
    return ClaimOrder(found, start)


def claim_rank_by(request):
    """The Ranking a claim without a key of its own or the server's is
    ranked by: spread on each class the request asks for, in the order
    asked (the host keeping most of the first class free first)."""
    classes = dict.fromkeys(name for group in request.groups.values()
                            for name in group.resources)
    return rank_query.Ranking(tuple(
        rank_query.Order(rank_query.SPREAD, name) for name in classes))


class _Dispersion:
    """How far into the exact order a request's answer starts (see
    engine.dispersion)."""

    def __init__(self, options):
        self.most = options.dispersion
        self.seed = options.dispersion_seed

    def offset(self, engine, asked):
        """The offset of the next answer to the Question ``asked``."""
        return dispersion.next_offset(engine, asked.key('dispersion'),
                                      self.most, self.seed)


def _ranked(database, asked, request, bound, by_server=False,
            dispersed=None):
    """The Candidates of ``request``, ranked, for the Question ``asked``
    (its request as the client sent it: ``request`` may rank by the
    server's order or a claim's): a request of 1.42, or ranked by
    ``[placement] allocation_candidates_rank_by``): the best ``bound`` by
    the rank key (engine/ranked_search.py), whatever the strategy and
    randomizing; with ``dispersed`` (a _Dispersion), without the best
    trees, as many as the offset it gives (ranked_search.ranked).
    ``by_server``: the ranking is the option's, whose classes that do not
    exist are left out (a request's own are refused).
    Before 1.29 (not ``nested_aware``) a candidate takes each class from
    one provider, and summaries show the providers giving resources."""
    nested_aware = request.nested_aware
    tally = explain.Tally(request) if request.explain else (
        explain.NOT_TALLIED)
    found = EMPTY
    ranked = None
    with database.replica_reader() as conn:
        best_trees_left_out = 0 if dispersed is None else dispersed.offset(
            conn.engine, asked)
        shape = None if bound is None else _Shape(conn.engine, asked)
        counted = _Counted()
        try:
            ranked = ranked_search.ranked(
                conn, asked, request, bound, tally, by_server,
                best_trees_left_out, shape and shape.first_window(
                    bound + best_trees_left_out), counted)
        except search.NoCandidates:
            pass
        if shape is not None:
            shape.remember(counted)
        if ranked is not None and ranked.chosen:
            if bound is not None:
                tally.returned({c.anchor for c in ranked.chosen})
            shown = None
            if not nested_aware and db.has_provider_trees(conn):
                shown = _legacy_summary_providers(ranked.combiners,
                                                  ranked.chosen, True)
            found = _with_summaries(conn, ranked.snapshot, ranked.roots,
                                    ranked.chosen, shown, request)
    if tally.active:
        found = dataclasses.replace(found, explanation=dataclasses.replace(
            tally.report(),
            ranking=ranked.explained if ranked
            else ranked_search.RankExplanation(
                ranked_search.key_names(request.ranking), 0, [])))
    return found
