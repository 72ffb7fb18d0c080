"""Ranked allocation candidates (microversion 1.42): the best ``limit``
candidates of the request by a documented, total key, not the first ones
found. The key and what each term means are defined in
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

Bounded work: the trees are walked best bound first, a candidate enters
the answer once no bound left can beat its key, and the walk stops once
the answer holds ``limit`` candidates, so only those trees are walked
whose candidates could be in the answer. A
tree searched gets an optimistic key (:meth:`_Keys.bound`), a bound no
candidate of the tree can beat, made from what the search found (each
provider's capacity and usage, the options of each group). The trees not
yet searched wait in *streams* (:class:`_Stream`), each a run of the
cloud's tree order (db.cloud.orders: by what a tree keeps free of the
classes of ``rank_by``) whose trees share one bound on their preferred
count (what preferred traits their providers, and every sharing provider,
have): the bound of a stream's next tree, which no later tree of the
stream beats, stands for all of them, and when it is the best left, the
next window of the stream is searched. With a limit, only the windows
holding the trees that can rank are searched; without one (or with
explain=<uuid>) each choice of alternatives searches the whole cloud (the
one tree) at once. The answer equals the brute-force one (every candidate
of every tree, sorted by the key, cut at ``limit``):
tests/test_ranked_candidates.py checks it on random worlds, with windows
of every size.

Alternatives: one search per choice of alternatives
(rank_query.alternative_requests). A tree uses the first choice under which
it has a candidate. The choice's rank leads the key, so every tree and
stream of a choice is walked or left behind before those of the next:
a tree walked without a candidate under a choice is met again in the
next choice's streams, and a tree with one is skipped there.
"""

import collections
import dataclasses
import heapq
import itertools
import math
import operator
import typing

import numpy as np

from placement_lite import errors
from placement_lite.db import candidates as db
from placement_lite.db import cloud
from placement_lite.db import snapshot
from placement_lite.engine import combine
from placement_lite.engine import rank_query
from placement_lite.engine import reuse
from placement_lite.engine import search


@dataclasses.dataclass
class Ranked:
    #: combine.Candidate objects, best first.
    chosen: list
    #: {provider id: root id} of every provider they name.
    roots: dict
    #: The snapshot.Snapshot the summaries are made from.
    snapshot: object
    #: The combine.Combiner of every search the candidates come from.
    combiners: list
    #: With explain: a RankExplanation.
    explained: typing.Optional['RankExplanation'] = None


@dataclasses.dataclass
class KeyExplanation:
    """The rank key of one returned candidate, term by term."""

    #: The suffixes of the alternatives used, one per set.
    alternatives: tuple
    preferred: int
    round: int
    #: {resource class name: free after the candidate}, in rank_by order.
    free: dict
    #: The uuid of the root of the candidate's tree.
    tree: str
    index: int
    #: The alternatives tried first: Skipped, in priority order.
    skipped: list


class Skipped(typing.NamedTuple):
    """Why the tree could not use ``alternatives``: no provider of the tree
    can serve ``group`` (``step`` 'trees'), or no allocation request of
    the tree meets the rule ``step`` (combine.Combiner.rules)."""

    alternatives: tuple
    step: str
    group: typing.Optional[str] = None


@dataclasses.dataclass
class RankExplanation:
    #: The names of the key's terms, in order.
    key: list
    #: How many trees were walked for their candidates.
    walked: int
    #: A KeyExplanation per returned candidate, in order.
    candidates: list


class _Choice:
    """The search of one window under one choice of alternatives (the
    ``index``-th): its result and combiner."""

    def __init__(self, index, alternative, searcher, result, tally,
                 nested_aware, roomiest_first):
        self.index = index
        self.alternative = alternative
        self.searcher = searcher
        self.result = result
        self.combiner = combine.Combiner(
            result, alternative.request, parents=searcher.snapshot.parents,
            nested_aware=nested_aware, tally=tally,
            roomiest_first=roomiest_first)


def ranked(conn, request, bound, tally, nested_aware=True,
           by_server=False, best_trees_left_out=0, first_window=None,
           counted=None):
    """The Ranked candidates of ``request`` (with a rank_query.Ranking), at
    most ``bound`` (None: all of them); raises errors.BadRequest and
    search.NoCandidates as the search does. Before 1.29 (not
    ``nested_aware``) a candidate takes each class from one provider.
    ``by_server``: the ranking is ``[placement]
    allocation_candidates_rank_by``'s, whose classes that do not exist
    are left out rather than refused, and a tree's candidates are
    generated roomiest choices first, as a bounded unranked request's
    are (api-ref/allocation_candidates.md): the first candidate of the
    host a scheduler picks takes from its roomiest providers.
    ``best_trees_left_out`` (dispersion): the answer leaves out every
    candidate of that many of the best trees (see _in_tree_order); only a
    request ranked by free amounts only (_keyed_by_free_only) leaves any
    out. With a bound, trees are searched in windows, the first of
    ``first_window`` trees (by default FIRST_WINDOW_MARGIN x what it
    wants), and ``counted`` (engine._Counted) adds the trees they held
    and those that could serve."""
    roomiest_first = by_server and nested_aware
    # Before the search reads anything (see reuse.Kept).
    made_at = cloud.of(conn.engine).clock
    alternatives = rank_query.alternative_requests(request)
    searchers = [search.Searcher(conn, alternative.request, tally)
                 for alternative in alternatives]
    if by_server:
        # The server's order: classes only (what the search reads of the
        # request's ranking is its trait names), no alternatives.
        request = dataclasses.replace(request, ranking=_known_classes_only(
            searchers[0].names, request.ranking))
        alternatives = rank_query.alternative_requests(request)
    else:
        _check_names(searchers[0].names, request.ranking)
    if bound is not None:
        first_window = first_window or max(WINDOW_MIN, math.ceil(
            (bound + best_trees_left_out) * FIRST_WINDOW_MARGIN))
        if not tally.active and _keyed_by_free_only(request):
            searcher, = searchers
            walked = _in_tree_order(
                searcher, request, bound, nested_aware, roomiest_first,
                best_trees_left_out, first_window, counted,
                reuse.kept_for(searcher.snapshot.store,
                               ('first in tree order', roomiest_first),
                               request, None, tally, made_at))
            if walked is not None:
                return walked
    return _Walk(conn, request, alternatives, searchers, bound, tally,
                 nested_aware, roomiest_first, first_window, counted,
                 made_at).ranked()


def _keyed_by_free_only(request):
    """Whether the key of ``request``'s candidates comes down to its
    tree's free amounts (rank_by alone: no alternatives or preferred
    traits), for every tree of the cloud (no group is kept to a tree by
    in_tree)."""
    rank_by = request.ranking
    return (rank_by.orders and not rank_by.alternatives
            and not rank_by.trait_names
            and not any(group.in_tree for group in request.groups.values()))


#: The first window of trees walked in tree order holds this many times
#: the trees wanted (at least WINDOW_MIN trees), unless the last search of
#: the request's shape says how many it takes (engine._Shape); each next
#: one twice the last.
FIRST_WINDOW_MARGIN = 1.25
WINDOW_MIN = 64


def _in_tree_order(searcher, request, bound, nested_aware, roomiest_first,
                   best_trees_left_out, first_window, counted, kept=None):
    """The Ranked candidates of a request keyed by its trees' free amounts
    only (_keyed_by_free_only), found without searching the whole cloud;
    None when some class of the key is held by a sharing provider (a
    candidate may then take it from outside its tree, and trees keeping
    as much free would not rank alike).

    Every candidate of a tree then has the same free terms (it takes what
    it asks of those classes from the tree) and no preferred trait, so a
    candidate's round is its index in its tree's generation order, and the
    key orders the candidates by round, then by tree in the order of what
    the trees keep free (db.cloud.orders): the first candidate of each tree
    that can serve, trees in that order, then the second of each, and so
    on. A candidate made only of sharing providers, which several trees
    give, is kept where it comes first. The trees are walked in that
    order, in windows (snapshot.Window.of_roots) searched as the unranked
    search does, until ``bound`` trees gave their first candidate; only
    when fewer can does the walk reach every tree. The answer is the
    brute-force one.

    With ``best_trees_left_out`` (n), every candidate of the first n trees
    that can serve is left out of the answer (where fewer trees can serve,
    n modulo their number): the answer's first candidate is then the best
    of the (n + 1)th tree, wherever the rounds go. A tree's first
    candidate is taken from ``kept`` (a reuse.Kept) where it holds it."""
    read = searcher.snapshot
    orders = request.ranking.free_terms(searcher.names.class_ids)
    if any(read.sharing_holders(rc_id) for rc_id, _sign in orders):
        return None
    order = read.tree_order(orders)
    asked = _asked_of_trees(request, searcher.names.class_ids,
                            read.sharing_holders)
    answer = _TreesInTurn(bound, best_trees_left_out)
    roots = {}
    combiners = []
    for keyed in _tree_batches(searcher, order, orders, asked, first_window,
                               _only_trees(searcher)):
        batch = [root_id for _key, root_id in keyed]
        found = searcher.search(snapshot.Window.of_roots(batch))
        if counted is not None:
            counted.trees += len(batch)
            counted.anchors += len(found.anchors) if found else 0
        if found is None:
            continue
        roots.update(found.roots)
        combiner = combine.Combiner(found, request, parents=read.parents,
                                    nested_aware=nested_aware,
                                    roomiest_first=roomiest_first)
        combiners.append(combiner)
        anchors = set(found.anchors)
        for anchor in batch:
            if anchor in anchors and answer.first_of_tree(
                    *reuse.first_and_others(combiner, anchor, kept,
                                            every=True), found.sharing):
                break
        else:
            continue
        break
    else:
        answer.every_tree_walked()
    if not searcher.all_groups_reached:
        searcher.check_unreached_names()
    return Ranked(answer.chosen, roots, read, combiners)


class _TreesInTurn:
    """The answer of _in_tree_order: the first candidate of each tree that
    can serve, trees in order, then the second of each, and so on; the
    trees of the best ``left_out`` out; ``bound`` candidates at most."""

    def __init__(self, bound, left_out):
        self.bound = bound
        self.left_out = left_out
        self.chosen = []
        #: (the tree's first candidate, its others lazily, the sharing
        #: providers of its search), for each tree that can serve, in order.
        self._trees = []
        #: Requests made only of sharing providers already met.
        self._met = set()

    def first_of_tree(self, first, others, sharing):
        """Take a tree's ``first`` candidate, if it has one (``others``:
        an iterator of the rest); whether the answer holds ``bound``
        candidates now."""
        if first is not None:
            self._trees.append((first, others, sharing))
            self._take(first, sharing, len(self._trees) <= self.left_out)
        return len(self.chosen) == self.bound

    def every_tree_walked(self):
        """Every tree was walked: the best trees left out are counted
        modulo those that can serve, and the later rounds taken."""
        served = len(self._trees)
        if served and served <= self.left_out:
            self.left_out %= served
            self.chosen.clear()
            self._met.clear()
            for index, (first, _others, sharing) in enumerate(self._trees):
                self._take(first, sharing, index < self.left_out)
        for candidate, sharing, index in combine.round_robin(
                _tagged(others, sharing, index)
                for index, (_first, others, sharing)
                in enumerate(self._trees)):
            if len(self.chosen) == self.bound:
                return
            self._take(candidate, sharing, index < self.left_out)

    def _take(self, candidate, sharing, left_out):
        if len(self.chosen) == self.bound:
            return
        identity = _identity(candidate, sharing)
        if identity is not None:
            if identity in self._met:
                return
            self._met.add(identity)
        if not left_out:
            self.chosen.append(candidate)


def _tagged(candidates, sharing, index):
    """(candidate, ``sharing``, ``index``) for each of ``candidates``,
    lazily: the later rounds make only as many as the answer takes."""
    for candidate in candidates:
        yield candidate, sharing, index


def _asked_of_trees(request, class_ids, shared):
    """{rc id: (what ``request`` asks of the class in all, the most one
    group asks)} for the classes it asks that no sharing provider holds
    (``shared(rc id)`` tells): what a tree must keep free to serve it (one
    provider gives a group all it asks of a class, unless the group may
    split it: can_split, 1.44)."""
    asked = {}
    for group in request.groups.values():
        for name, amount in group.resources.items():
            rc_id = class_ids.get(name)
            if rc_id is not None and not shared(rc_id):
                total, of_one = asked.get(rc_id, (0, 0))
                asked[rc_id] = (total + amount, max(
                    of_one, 0 if name in group.can_split else amount))
    return asked


def _only_trees(searcher):
    """The root ids of the only trees that could serve the request of
    ``searcher``, when they are few (Searcher.few_trees) or root_required
    and root_member_of allow only some; None: any tree. Raises
    search.NoCandidates as few_trees does."""
    names = searcher.names
    only = searcher.few_trees()
    if names.allowed_anchors is not None:
        only = names.allowed_anchors if only is None else (
            names.allowed_anchors.intersection(only))
    return only


def _tree_batches(searcher, order, orders, asked, size, only, among=None,
                  outside=None):
    """Lists of (key, root id) to walk in turn, in tree order: the first
    of ``size`` trees, each next one twice as many (all of ``only`` at
    once when they are no more). Only trees that could serve: of
    ``only`` (_only_trees) when not None, not excluded by
    root_required, keeping free what ``asked`` (_asked_of_trees) needs,
    and, when given, among the root ids ``among`` and not among
    ``outside`` (numpy arrays)."""
    excluded = searcher.names.excluded_anchors
    if only is not None and len(only) <= size:
        only = set(only).difference(excluded)
        if among is not None:
            only.intersection_update(among.tolist())
        if outside is not None:
            only.difference_update(outside.tolist())
        ordered = order.ordered(only, asked)
        if ordered:
            yield ordered
        return
    if only is not None:
        only = np.fromiter(only, np.int64, len(only))
        among = only if among is None else np.intersect1d(only, among)
    # Only keys keeping at least ``need`` of the first class: from the
    # first (pack), or up to the last (spread).
    lowest = highest = None
    if orders:
        first_class, sign = orders[0]
        need = asked.get(first_class, (0, 0))[0]
        lowest = (need,) if sign > 0 and need else None
        highest = (-need, math.inf) if sign < 0 and need else None
    after = None
    while True:
        found, after = order.after(after, size, asked, lowest, highest,
                                   among, outside)
        batch = [(key, root_id) for key, root_id in found
                 if root_id not in excluded]
        if batch:
            yield batch
        if after is None or len(found) < size:
            return
        size *= 2


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


class _Keys:
    """The rank keys of candidates and the bounds of trees. What a tree
    keeps free comes from the tree order (db.cloud.orders), whose key
    holds it signed: (sign x free of each class of rank_by, ..., root
    id)."""

    def __init__(self, rank_by, read, order):
        self.rank_by = rank_by
        #: The snapshot.Snapshot of the whole cloud (the tree order's).
        self.read = read
        self.order = order
        #: [(rc name, 1 for pack or -1 for spread)], in order.
        self.orders = [(order.resource_class, order.sign)
                       for order in rank_by.orders]
        #: {provider id: its trait names}.
        self._traits = {}

    def traits(self, provider_id):
        """The trait names of ``provider_id`` (a tuple)."""
        found = self._traits.get(provider_id)
        if found is None:
            found = self._traits[provider_id] = self.read.trait_names(
                provider_id)
        return found

    def read_traits(self, provider_ids):
        """Look up the trait names of ``provider_ids`` at once, if
        preferred traits are asked (cheaper than one by one)."""
        if self.rank_by.trait_names:
            self._traits.update(self.read.trait_names_of(provider_ids))

    def _signed_free(self, anchor):
        """(sign x what the tree ``anchor`` keeps free of each class of
        rank_by, ...)."""
        return self.order.key_of(anchor)[:len(self.orders)]

    def _root_preferred(self, choice, anchor):
        wanted = self.rank_by.root_preferred
        return len(wanted.intersection(self.traits(anchor))) if wanted else 0

    def bound(self, choice, anchor, signed_free=None):
        """(A key no candidate of the tree ``anchor`` under ``choice`` can
        beat, each term at its best; the free terms every candidate of the
        tree has, when they are the same for all: no group asking a class
        of rank_by can take it both from the tree and from outside).
        ``signed_free``: what the tree keeps free, signed, if known."""
        result = choice.result
        preferred = self._root_preferred(choice, anchor)
        wanted = self.rank_by.preferred
        for group in result.groups:
            names = wanted.get(group.suffix)
            if not names:
                continue
            options = group.by_anchor[anchor]
            if group.by_class:
                offered = frozenset().union(*(
                    self.traits(p) for providers in options.values()
                    for p in providers))
                preferred += len(names & offered)
            else:
                preferred += max(len(names.intersection(self.traits(p)))
                                 for p in options)
        class_ids = choice.searcher.names.class_ids
        terms = []
        fixed = []
        for (name, sign), free in zip(self.orders, signed_free or (
                self._signed_free(anchor))):
            rc_id = class_ids.get(name)
            most = least = 0
            for group in result.groups:
                amount = group.amounts.get(rc_id)
                if amount is None:
                    continue
                most += amount
                options = group.by_anchor[anchor]
                if group.by_class:
                    options = options[rc_id]
                inside = sum(result.root_of(p) == anchor for p in options)
                # Unless a sharing provider of another tree may give it.
                if inside == len(options):
                    least += amount
                elif inside and fixed is not None:
                    fixed = None
            # spread: at best the tree gives least; pack: at best most.
            taken = most if sign > 0 else least
            terms.append(free - sign * taken)
            if fixed is not None:
                fixed.append(free - sign * least)
        return ((*choice.alternative.rank, -preferred, 0, *terms, anchor, -1),
                None if fixed is None else tuple(fixed))

    def preferred(self, choice, anchor, candidate):
        """How many preferred traits ``candidate`` (of the tree
        ``anchor``) has."""
        wanted = self.rank_by.preferred
        preferred = self._root_preferred(choice, anchor)
        traits = self.traits
        for suffix, providers in candidate.mappings.items():
            for name in wanted.get(suffix, ()):
                for provider in providers:
                    if name in traits(provider):
                        preferred += 1
                        break
        return preferred

    def of_tree(self, choice, anchor, candidates):
        """The keys of ``candidates``, every candidate of the tree
        ``anchor`` under ``choice`` in generation order."""
        root_of = choice.result.root_of
        signed_free = self._signed_free(anchor)
        partial = []
        for index, candidate in enumerate(candidates):
            terms = []
            for (name, sign), free in zip(self.orders, signed_free):
                taken = sum(resources.get(name, 0) for provider, resources
                            in candidate.allocations.items()
                            if root_of(provider) == anchor)
                terms.append(free - sign * taken)
            partial.append((-self.preferred(choice, anchor, candidate),
                            tuple(terms), index))
        rounds = collections.Counter()
        keys = [None] * len(partial)
        for negative_preferred, terms, index in sorted(partial):
            keys[index] = (*choice.alternative.rank, negative_preferred,
                           rounds[negative_preferred], *terms, anchor,
                           index)
            rounds[negative_preferred] += 1
        return keys


class _Tree:
    """A tree searched under one choice of alternatives, in the walk: by
    its bound in its stream until its own is made (_Keys.bound), unless
    no sharing provider holding a class of rank_by serves it (its
    candidates' free terms are then those of that bound); then,
    when every candidate of the tree has the same free terms (``fixed``),
    its candidates are taken one at a time, in generation order, which is
    their order by key: each next one by the best key it could have (as
    many preferred traits as the tree's bound, the next round of that
    count)."""

    __slots__ = ('choice', 'anchor', 'signed_free', 'bounded', 'fixed',
                 'candidates', 'most', 'rounds', 'index')

    def __init__(self, choice, anchor, signed_free=None, fixed=None):
        self.choice = choice
        self.anchor = anchor
        #: (sign x what the tree keeps free of each class of rank_by, ...),
        #: None until looked up.
        self.signed_free = signed_free
        #: Whether its own bound is known (or its candidates' terms:
        #: the bound in its stream is then as good).
        self.bounded = fixed is not None
        self.fixed = fixed
        #: The candidates not taken yet (an iterator), once walked.
        self.candidates = None
        #: The most preferred traits a candidate of the tree can have.
        self.most = 0
        #: {preferred count: candidates taken with it}.
        self.rounds = {}
        self.index = 0

    def next_key(self, candidate, preferred):
        """The key of ``candidate``, the next one taken (``fixed``), which
        has ``preferred`` preferred traits; the best key the one after it
        could have."""
        rank = self.choice.alternative.rank
        rounds = self.rounds
        taken = rounds.get(preferred, 0)
        key = _key(rank, preferred, taken, self.fixed, self.anchor,
                   self.index)
        rounds[preferred] = taken + 1
        self.index += 1
        return key, _key(rank, self.most, rounds.get(self.most, 0),
                         self.fixed, self.anchor, self.index)

    @classmethod
    def after_first(cls, choice, anchor, fixed, others, most, preferred):
        """The tree ``anchor`` whose first candidate, taken, had
        ``preferred`` preferred traits, of ``most`` at best, and every
        candidate its ``fixed`` free terms; ``others``: its candidates
        after the first."""
        tree = cls(choice, anchor, fixed=fixed)
        tree.candidates = others
        tree.most = most
        tree.rounds = {preferred: 1}
        tree.index = 1
        return tree


def _key(rank, preferred, round_, terms, anchor, index):
    """The rank key of the ``index``-th candidate of the tree ``anchor``
    (see the module's docstring)."""
    return (*rank, -preferred, round_, *terms, anchor, index)


_NO_ROOTS = np.zeros(0, np.int64)


class _Batch(typing.NamedTuple):
    """Trees a stream searches at once: the window, and (key, root id) of
    each tree in tree order (None for the whole cloud or one named
    tree)."""

    window: typing.Optional[snapshot.Window]
    keys: typing.Optional[list]


class _Stream:
    """The trees of one choice of alternatives not searched yet that share
    one bound on their preferred count and whether a sharing provider
    holding a class of rank_by serves them (_Walk._parts): the batches
    still to search, the next one waiting. A tree's bound in the stream
    (bound_of) is its key in the tree order moved by ``shifts`` behind
    ``head`` (the choice's rank, minus that preferred count, round 0);
    the next batch's first tree's (``bound``) stands for every tree left,
    none of which beats it. A batch of the whole cloud, or of the tree
    explain=<uuid> names, has no keys: its bound is ``head``, the choice's
    rank alone."""

    def __init__(self, index, batches, head, shifts=(), served=False):
        self.index = index
        self._batches = batches
        self.head = head
        self.shifts = shifts
        #: Whether a sharing provider holding a class of rank_by serves
        #: its trees.
        self.served = served
        self.batch = next(batches, None)

    @property
    def most(self):
        """The most preferred traits a candidate of its trees can have."""
        return -self.head[-2]

    def terms_of(self, key):
        """The free terms of the bound of the tree whose key in the tree
        order is ``key``."""
        return tuple(map(operator.sub, key, self.shifts))

    def bound_of(self, key, terms=None):
        """The bound of the tree whose key in the tree order is ``key``
        (``terms``: its terms_of, if known)."""
        if terms is None:
            terms = self.terms_of(key)
        return (*self.head, *terms, key[-1], -1)

    @property
    def bound(self):
        keys = self.batch.keys
        return self.head if keys is None else self.bound_of(keys[0][0])

    def take(self):
        """The batch to search now; the next one waits."""
        batch, self.batch = self.batch, next(self._batches, None)
        return batch


class _Run:
    """The trees of a batch of a stream searched under one _Choice, not
    walked yet, in tree order: the walk takes them one after another
    while the next is the best thing it holds, and keeps the rest by the
    next one's bound (_Walk._take_run)."""

    __slots__ = ('stream', 'choice', 'keys', 'at', 'later')

    def __init__(self, stream, choice, keys):
        self.stream = stream
        self.choice = choice
        #: [(key in the tree order, root id)], in tree order.
        self.keys = keys
        self.at = 0
        #: Its _Later, once a tree gave its first candidate.
        self.later = None

    def bound(self):
        return self.stream.bound_of(self.keys[self.at][0])


class _Later:
    """The trees of a _Run whose first candidate, taken, had as many
    preferred traits as a candidate there can have: the best key the next
    candidate of each could have is the next round of that count, so
    they come in tree order too, and wait here in it rather than one by
    one in the heap; each is walked as a _Tree once it is the best
    (_Walk._take_later)."""

    __slots__ = ('choice', 'most', 'trees', 'at', 'queued')

    def __init__(self, choice, most):
        self.choice = choice
        self.most = most
        #: [(free terms, root id, its candidates after the first)].
        self.trees = []
        self.at = 0
        #: Whether it is in the heap.
        self.queued = False

    def bound(self):
        terms, anchor, _others = self.trees[self.at]
        return _key(self.choice.alternative.rank, self.most, 1, terms,
                    anchor, 1)


class _Offered(typing.NamedTuple):
    """A candidate found before its turn in the answer: it waits in the
    heap by its key."""

    candidate: object
    choice: _Choice
    identity: object


class _Walk:
    """The best-first walk over the trees of one ranked request (see the
    module's docstring). Its heap holds, by bound: the start of each
    choice of alternatives (whose bound, its rank alone, comes before
    anything of that choice), the streams of trees not searched yet, the
    runs of trees searched and not walked yet (_Run) and those walked
    whose next candidates come in tree order (_Later), the other trees
    searched, each with the _Choice of its window, and the candidates
    found before their turn (_Offered). A candidate enters the answer
    once nothing in the heap can beat it, so the answer is made in key
    order, and the walk stops once it holds ``limit`` candidates."""

    def __init__(self, conn, request, alternatives, searchers, bound, tally,
                 nested_aware, roomiest_first, first_window, counted,
                 made_at):
        """``alternatives``: rank_query.alternative_requests of
        ``request``, ``searchers`` a search.Searcher of each; ``made_at``:
        the store's clock before anything was read (see reuse.Kept)."""
        self.bound = bound
        self.tally = tally
        self.nested_aware = nested_aware
        self.roomiest_first = roomiest_first
        self.first_window = first_window
        self.counted = counted
        self.alternatives = alternatives
        self.searchers = searchers
        self.class_ids = self.searchers[0].names.class_ids
        self.read = self.searchers[0].snapshot
        #: For each choice, the first candidates kept of its trees whose
        #: candidates come in key order (reuse.Kept, or None).
        self.kept = [reuse.kept_for(self.read.store,
                                    ('first in key order', roomiest_first),
                                    alternative.request, None, tally,
                                    made_at)
                     for alternative in self.alternatives]
        #: ((rc id, sign), ...) of rank_by: how the tree order goes.
        self.orders = request.ranking.free_terms(self.class_ids)
        self.order = self.read.tree_order(self.orders)
        self.keys = _Keys(request.ranking, self.read, self.order)
        self.conn = conn
        self._served_trees = None
        self._heap = []
        self._sequence = itertools.count()
        #: Trees with a candidate under some choice: no later choice's.
        self.settled = set()
        #: For each choice: {anchor: the _Choice of the window searched}.
        self.searched = [{} for _ in self.alternatives]
        self.combiners = []
        self.roots = {}
        self.answer = _Answer(bound)
        #: Trees walked for their candidates.
        self.walked = 0

    def ranked(self):
        for index, alternative in enumerate(self.alternatives):
            self._push(tuple(alternative.rank), index)
        answer = self.answer
        heap = self._heap
        while heap and not answer.full():
            bound, _number, item = heapq.heappop(heap)
            if isinstance(item, int):
                self._start(item)
            elif isinstance(item, _Stream):
                self._search(item)
            elif isinstance(item, _Run):
                self._take_run(item)
            elif isinstance(item, _Later):
                self._take_later(item)
            elif isinstance(item, _Offered):
                answer.take(bound, *item)
            else:
                self._walk(item, bound)
        for searcher in self.searchers:
            if not searcher.all_groups_reached:
                searcher.check_unreached_names()
        chosen = answer.chosen
        return Ranked([candidate for _key, candidate, _choice in chosen],
                      self.roots, self.read, self.combiners,
                      self._explain(chosen, self.walked)
                      if self.tally.active else None)

    def _offer(self, key, candidate, choice):
        """Put ``candidate`` (of ``choice``, by ``key``) in the answer if
        nothing in the heap can beat it, else in the heap. Whatever is
        being walked has put in the heap what it may still give."""
        heap = self._heap
        identity = _identity(candidate, choice.result.sharing)
        if not heap or key <= heap[0][0]:
            self.answer.take(key, candidate, choice, identity)
        else:
            self._push(key, _Offered(candidate, choice, identity))

    def _take_run(self, run):
        """Take the trees of ``run`` (a _Run, the best in the walk) while
        the next one is still the best, without a trip through the heap;
        the run goes back by the next one's bound."""
        heap = self._heap
        stream = run.stream
        keys = run.keys
        while run.at < len(keys) and not self.answer.full():
            key, anchor = keys[run.at]
            terms = stream.terms_of(key)
            bound = stream.bound_of(key, terms)
            if heap and heap[0][0] < bound:
                self._push(bound, run)
                return
            run.at += 1
            if anchor in self.settled:
                continue
            if stream.served:
                # Its own bound may be worse than the stream's.
                self._walk(_Tree(run.choice, anchor,
                                 key[:len(stream.shifts)]), bound)
            else:
                self._take_first(run, anchor, terms)

    def _take_first(self, run, anchor, terms):
        """Take the first candidate of the tree ``anchor`` of ``run``,
        every candidate of which has the free terms ``terms``: they come
        in key order, and the first has the best key of the tree, better
        than the next tree's bound."""
        choice = run.choice
        self.walked += 1
        first, others = reuse.first_and_others(
            choice.combiner, anchor, self.kept[choice.index], every=True)
        if first is None:
            return
        self.settled.add(anchor)
        most = run.stream.most
        preferred = self.keys.preferred(choice, anchor, first)
        rank = choice.alternative.rank
        if preferred == most:
            later = run.later
            if later is None:
                later = run.later = _Later(choice, most)
            later.trees.append((terms, anchor, others))
            if not later.queued:
                later.queued = True
                self._push(later.bound(), later)
        else:
            # The next candidate may have more: its best key is the first
            # round of the most.
            self._push(_key(rank, most, 0, terms, anchor, 1),
                       _Tree.after_first(choice, anchor, terms, others, most,
                                         preferred))
        self._offer(_key(rank, preferred, 0, terms, anchor, 0), first,
                    choice)

    def _take_later(self, later):
        """Walk the next tree of ``later`` (a _Later, the best in the
        walk) for its next candidate."""
        bound = later.bound()
        terms, anchor, others = later.trees[later.at]
        later.at += 1
        if later.at < len(later.trees):
            self._push(later.bound(), later)
        else:
            later.queued = False
        self._walk(_Tree.after_first(later.choice, anchor, terms, others,
                                     later.most, later.most), bound)

    def _walk(self, tree, bound):
        """Take what the _Tree ``tree``, best in the walk by ``bound``,
        gives now: its own bound, else its candidates (all of them, or
        the next when they come in key order)."""
        choice, anchor = tree.choice, tree.anchor
        if tree.candidates is None and anchor in self.settled:
            return
        if not tree.bounded:
            # Its bound in its stream: its own may be worse.
            own, tree.fixed = self.keys.bound(choice, anchor,
                                              tree.signed_free)
            tree.bounded = True
            self._push(own, tree)
            return
        if tree.candidates is None:
            self.walked += 1
            tree.candidates = self._candidates(tree)
            tree.most = -bound[len(choice.alternative.rank)]
        if tree.fixed is None:
            candidates = list(tree.candidates)
            if candidates:
                self.settled.add(anchor)
            for key, candidate in sorted(zip(
                    self.keys.of_tree(choice, anchor, candidates),
                    candidates), key=operator.itemgetter(0)):
                self._offer(key, candidate, choice)
            return
        candidate = next(tree.candidates, None)
        if candidate is not None:
            self.settled.add(anchor)
            key, rest = tree.next_key(candidate, self.keys.preferred(
                choice, anchor, candidate))
            self._push(rest, tree)
            self._offer(key, candidate, choice)

    def _candidates(self, tree):
        """The candidates of ``tree`` (an iterator), its first kept from
        an earlier request where its candidates come in key order."""
        choice = tree.choice
        if tree.fixed is None:
            return choice.combiner.for_anchor(tree.anchor, every=True)
        first, others = reuse.first_and_others(
            choice.combiner, tree.anchor, self.kept[choice.index],
            every=True)
        return others if first is None else itertools.chain((first,),
                                                            others)

    def _push(self, bound, item):
        heapq.heappush(self._heap, (bound, next(self._sequence), item))

    def _start(self, index):
        """Put the trees of the ``index``-th choice of alternatives in
        the walk: the whole cloud (or the tree explain=<uuid> names) as
        one window without a bound, else a stream per part of the trees
        that share a bound (_parts)."""
        searcher = self.searchers[index]
        rank = tuple(self.alternatives[index].rank)
        root = searcher.explained_root
        if self.bound is None or root is not None:
            window = None if root is None else snapshot.Window(root, root,
                                                               False)
            self._search(_Stream(index, iter([_Batch(window, None)]), rank))
            return
        request = self.alternatives[index].request
        try:
            only = _only_trees(searcher)
        except search.NoCandidates:
            return
        asked = _asked_of_trees(request, self.class_ids,
                                self.read.sharing_holders)
        streams = 0
        for preferred, served, among, outside in self._parts(request):
            batches = (_Batch(snapshot.Window.of_roots(
                [root_id for _key, root_id in keys]), keys)
                for keys in _tree_batches(searcher, self.order, self.orders,
                                          asked, self.first_window, only,
                                          among, outside))
            stream = _Stream(index, batches, (*rank, -preferred, 0),
                             self._shifts(request, served), served)
            if stream.batch is not None:
                self._push(stream.bound, stream)
                streams += 1
        if not streams and self.tally.active:
            # No tree keeps free what the choice asks: explain tells
            # which step of the search of the whole cloud would say so.
            self._search(_Stream(index, iter([_Batch(None, None)]), rank))

    def _parts(self, request):
        """The trees of the cloud in parts that share a bound, one stream
        each: (the most preferred traits a candidate of ``request`` can
        have there, whether a sharing provider holding a class of rank_by
        serves them, root ids they are among or None, root ids they are
        not among or None)."""
        least, by_most = self._preferred_bounds(request)
        held = np.concatenate(list(by_most.values()) or [_NO_ROOTS])
        parts = [(least, None, held)]
        parts.extend((most, roots, None) for most, roots in by_most.items())
        served = self._served()
        if not len(served):
            return [(most, False, among, outside)
                    for most, among, outside in parts]
        split = []
        # Every array of root ids here is unique; served and among sorted.
        for most, among, outside in parts:
            if among is None:
                split.append((most, True, np.setdiff1d(
                    served, outside, assume_unique=True) if len(outside)
                    else served, None))
                split.append((most, False, None, np.union1d(
                    outside, served) if len(outside) else served))
            else:
                split.append((most, True, np.intersect1d(
                    among, served, assume_unique=True), None))
                split.append((most, False, np.setdiff1d(
                    among, served, assume_unique=True), None))
        return [part for part in split
                if part[2] is None or len(part[2])]

    def _served(self):
        """The root ids of the trees a sharing provider holding a class of
        rank_by serves (a candidate there may take the class from outside
        the tree)."""
        if self._served_trees is None:
            holders = set().union(*(self.read.sharing_holders(rc_id)
                                    for rc_id, _sign in self.orders))
            self._served_trees = db.trees_served_by(
                self.conn, holders,
                self.read.derived_current()) if holders else _NO_ROOTS
        return self._served_trees

    def _shifts(self, request, served):
        """(sign x the most a candidate of ``request`` surely takes from
        its own tree of each class of rank_by, ...): what a tree's key in
        the tree order moves by in its bound (see _Keys.bound). Where a
        sharing provider holding the class serves the tree (``served``),
        it may come from outside the tree."""
        asked = collections.Counter()
        for group in request.groups.values():
            for name, amount in group.resources.items():
                asked[self.class_ids.get(name)] += amount
        return tuple(sign * (asked[rc_id] if sign > 0 or not served
                             or not self.read.sharing_holders(rc_id) else 0)
                     for rc_id, sign in self.orders)

    def _preferred_bounds(self, request):
        """(The most preferred traits a candidate of ``request`` can have
        in a tree none of whose providers has one: those some sharing
        provider has; {that most: root ids} for the other trees, with
        what they have added): no candidate of a tree has more. A
        group's preferred trait counts where a provider has it that can
        be in the group's mappings: one having an inventory of a class
        the group asks for (any, for a group asking none)."""
        ranking = request.ranking
        least = 0
        held = []
        for suffix, group in request.groups.items():
            rc_ids = [self.class_ids[name] for name in group.resources
                      if name in self.class_ids]
            for name in ranking.preferred.get(suffix, ()):
                roots, shared = self.read.trait_holders(name, rc_ids)
                if shared:
                    least += 1
                else:
                    held.append(roots)
        for name in ranking.root_preferred:
            held.append(self.read.trait_holders(name, roots_only=True)[0])
        held = [roots for roots in held if len(roots)]
        if len(held) < 2:
            # Unique already: no counting.
            return least, {least + 1: roots for roots in held}
        roots, counts = np.unique(np.concatenate(held), return_counts=True)
        return least, {least + count: roots[counts == count]
                       for count in np.unique(counts).tolist()}

    def _search(self, stream):
        """Search the next batch of ``stream`` and put its trees in the
        walk, each by its bound; the stream goes back by its next one."""
        index = stream.index
        batch = stream.take()
        if stream.batch is not None:
            self._push(stream.bound, stream)
        searcher = self.searchers[index]
        try:
            result = searcher.search(batch.window)
        except search.NoCandidates:
            result = None
        if self.counted is not None and batch.keys is not None:
            self.counted.trees += len(batch.keys)
            self.counted.anchors += len(result.anchors) if result else 0
        if result is None:
            return
        choice = _Choice(index, self.alternatives[index], searcher, result,
                         self.tally, self.nested_aware, self.roomiest_first)
        self.combiners.append(choice.combiner)
        self.roots.update(result.roots)
        searched = self.searched[index]
        settled = self.settled
        for anchor in result.anchors:
            if anchor not in settled:
                searched[anchor] = choice
                if batch.keys is None:
                    tree = _Tree(choice, anchor)
                    own, tree.fixed = self.keys.bound(choice, anchor)
                    tree.bounded = True
                    self._push(own, tree)
        self.keys.read_traits(result.roots)
        if batch.keys is not None:
            anchors = set(result.anchors)
            run = _Run(stream, choice, [
                (key, root_id) for key, root_id in batch.keys
                if root_id in anchors and root_id not in settled])
            if run.keys:
                self._push(run.bound(), run)

    def _explain(self, chosen, walked):
        """The RankExplanation of the ``chosen`` (key, candidate, choice)
        triples."""
        sets = len(self.keys.rank_by.alternatives)
        orders = self.keys.orders
        uuids = self.read.uuids_read(
            {candidate.anchor for _key, candidate, _choice in chosen})
        unserved = self._unserved(chosen)
        shown = []
        for key, candidate, choice in chosen:
            anchor = candidate.anchor
            terms = key[sets + 2:sets + 2 + len(orders)]
            shown.append(KeyExplanation(
                choice.alternative.used, -key[sets], key[sets + 1],
                {name: sign * term for (name, sign), term
                 in zip(orders, terms)},
                uuids[anchor], key[-1],
                self._skipped(choice.index, anchor, unserved)))
        return RankExplanation(key_names(self.keys.rank_by), walked, shown)

    def _unserved(self, chosen):
        """For each choice of alternatives, {root id: the first group the
        tree cannot serve} of the trees of ``chosen`` that used a later
        choice and were no anchor of this one's searches."""
        trees = [set() for _ in self.alternatives]
        for _key, candidate, choice in chosen:
            for index in range(choice.index):
                if candidate.anchor not in self.searched[index]:
                    trees[index].add(candidate.anchor)
        return [self.searchers[index].first_unserved(sorted(roots))
                if roots else {} for index, roots in enumerate(trees)]

    def _skipped(self, used, anchor, unserved):
        """Skipped, for each choice before the ``used``-th in the tree
        ``anchor``."""
        skipped = []
        for index in range(used):
            names = self.alternatives[index].used
            choice = self.searched[index].get(anchor)
            if choice is None:
                skipped.append(Skipped(names, 'trees',
                                       unserved[index].get(anchor)))
            else:
                skipped.append(Skipped(names,
                                       choice.combiner.dropped_by(anchor)))
        return skipped


def key_names(rank_by):
    """The names of the terms of the rank key of ``rank_by`` (a
    rank_query.Ranking), in order."""
    return (['alternatives', 'preferred', 'round']
            + [str(order) for order in rank_by.orders] + ['tree', 'index'])


class _Answer:
    """The candidates taken, in the order of their keys (the walk gives
    them so), ``bound`` at most (all of them with no bound). A request
    made only of sharing providers can come from several trees: the
    first, whose key is the best, is kept."""

    def __init__(self, bound):
        self.bound = bound
        #: [(key, candidate, choice)].
        self.chosen = []
        #: Identities of the requests made only of sharing providers.
        self._met = set()

    def take(self, key, candidate, choice, identity):
        if self.full():
            return
        if identity is not None:
            if identity in self._met:
                return
            self._met.add(identity)
        self.chosen.append((key, candidate, choice))

    def full(self):
        return self.bound is not None and len(self.chosen) >= self.bound


def _identity(candidate, sharing):
    """What makes a request made only of sharing providers the same as
    another from another tree; None for any other request."""
    if not sharing.issuperset(candidate.allocations):
        return None
    if not all(sharing.issuperset(providers)
               for providers in candidate.mappings.values()):
        return None
    return (frozenset((p, name, amount)
                      for p, resources in candidate.allocations.items()
                      for name, amount in resources.items()),
            frozenset((suffix, frozenset(providers))
                      for suffix, providers in candidate.mappings.items()))
