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

Bounded work: every tree that can serve the request gets an optimistic
key (:meth:`_Keys.bound`), a bound no candidate of the tree can beat, made from
what the search read (each provider's capacity and usage, the options of
each group). Trees are walked best bound first; the walk stops when the
next tree's bound is worse than the ``limit``-th best key found, so only
those trees are walked whose candidates could be in the answer. The
answer equals the brute-force one (every candidate of every tree, sorted
by the key, cut at ``limit``): tests/test_ranked_candidates.py checks it
on random worlds.

Alternatives: one search per choice of alternatives
(rank_query.alternative_requests). A tree uses the first choice under which
it has a candidate; its bound is that of the first choice whose search
offers the tree, and a tree walked without a candidate under a choice is
put back with the bound of its next one.
"""

import collections
import dataclasses
import heapq
import itertools
import math
import typing

import numpy as np

from placement_lite import errors
from placement_lite.db import candidates as db
from placement_lite.db import lookups
from placement_lite.db import snapshot
from placement_lite.engine import combine
from placement_lite.engine import rank_query
from placement_lite.engine import search


@dataclasses.dataclass
class Ranked:
    #: combine.Candidate objects, best first.
    chosen: list
    #: {provider id: root id} of every provider they name.
    roots: dict
    #: The snapshot.Snapshot the summaries are made from.
    snapshot: object
    #: The combine.Combiner of the first choice of alternatives served (of
    #: the request itself when it has none).
    combiner: object
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
    """The search of one choice of alternatives: its result, combiner and
    what its bounds need."""

    def __init__(self, alternative, searcher, result, tally, nested_aware,
                 roomiest_first):
        self.alternative = alternative
        self.searcher = searcher
        self.result = result
        self.combiner = None
        self.anchors = frozenset()
        if result is not None:
            self.combiner = combine.Combiner(
                result, alternative.request,
                parents=searcher.snapshot.parents, nested_aware=nested_aware,
                tally=tally, roomiest_first=roomiest_first)
            self.anchors = frozenset(result.anchors)

    def missing_group(self, anchor):
        """The suffix of the first group that cannot be served in the tree
        ``anchor``."""
        if self.result is None:
            suffixes = list(self.alternative.request.groups)
            return suffixes[max(self.searcher.groups_reached, 1) - 1]
        return next(group.suffix for group in self.result.groups
                    if anchor not in group.by_anchor)


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
    out. Such a request searches windows of trees, the first of
    ``first_window`` trees (by default FIRST_WINDOW_MARGIN x what it
    wants), and adds to ``counted`` (engine._Counted) the trees they held
    and those that could serve."""
    roomiest_first = by_server and nested_aware
    if by_server:
        request = dataclasses.replace(request, ranking=_known_classes_only(
            conn, request.ranking))
    rank_by = request.ranking
    trait_ids = _checked_names(conn, rank_by)
    if bound is not None and not tally.active and _keyed_by_free_only(
            request):
        walked = _in_tree_order(
            conn, request, bound, nested_aware, roomiest_first,
            best_trees_left_out, first_window or max(WINDOW_MIN, math.ceil(
                (bound + best_trees_left_out) * FIRST_WINDOW_MARGIN)),
            counted)
        if walked is not None:
            return walked
    choices = []
    for alternative in rank_query.alternative_requests(request):
        searcher = search.Searcher(conn, alternative.request, tally)
        window = None
        if searcher.explained_root is not None:
            root = searcher.explained_root
            window = snapshot.Window(root, root, False)
        try:
            result = searcher.search(window)
        except search.NoCandidates:
            result = None
        choices.append(_Choice(alternative, searcher, result, tally,
                               nested_aware, roomiest_first))
    served = [choice for choice in choices if choice.result is not None]
    if not served:
        raise search.NoCandidates()
    keys = _Keys(conn, rank_by, trait_ids, served[0].searcher, choices)
    chosen, walked = _best(choices, keys, bound)
    explained = None
    if tally.active:
        explained = keys.explain(chosen, walked)
    roots = {}
    for choice in served:
        roots.update(choice.result.roots)
    return Ranked([candidate for _key, candidate, _choice in chosen], roots,
                  served[0].searcher.snapshot, served[0].combiner, explained)


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


def _in_tree_order(conn, request, bound, nested_aware, roomiest_first,
                   best_trees_left_out, first_window, counted):
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
    of the (n + 1)th tree, wherever the rounds go."""
    searcher = search.Searcher(conn, request)
    read = searcher.snapshot
    orders = request.ranking.free_terms(searcher.names.class_ids)
    sharing = searcher.names.every_sharing_provider
    if any(read.any_holder_among(rc_id, sharing) for rc_id, _sign in orders):
        return None
    order = read.tree_order(orders)
    asked = _asked_of_trees(request, searcher.names.class_ids,
                            lambda rc_id: read.any_holder_among(rc_id,
                                                                sharing))
    answer = _TreesInTurn(bound, best_trees_left_out)
    roots = {}
    combiner = None
    for batch in _tree_batches(searcher, order, orders, asked, first_window):
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
        anchors = set(found.anchors)
        for anchor in batch:
            if anchor in anchors and answer.first_of_tree(
                    combiner.for_anchor(anchor, every=True), found.sharing):
                break
        else:
            continue
        break
    else:
        answer.every_tree_walked()
    if not searcher.all_groups_reached:
        searcher.check_unreached_names()
    return Ranked(answer.chosen, roots, read, combiner)


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

    def first_of_tree(self, candidates, sharing):
        """Take the first of a tree's ``candidates`` (an iterator), if it
        has one; whether the answer holds ``bound`` candidates now."""
        first = next(candidates, None)
        if first is not None:
            self._trees.append((first, candidates, sharing))
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
        for later in itertools.zip_longest(*(
                [(candidate, sharing, index) for candidate in others]
                for index, (_first, others, sharing)
                in enumerate(self._trees))):
            for candidate, sharing, index in filter(None, later):
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


def _asked_of_trees(request, class_ids, shared):
    """{rc id: (what ``request`` asks of the class in all, the most one
    group asks)} for the classes it asks that no sharing provider holds
    (``shared(rc id)`` tells): what a tree must keep free to serve it (one
    provider gives a group all it asks of a class)."""
    asked = {}
    for group in request.groups.values():
        for name, amount in group.resources.items():
            rc_id = class_ids.get(name)
            if rc_id is not None and not shared(rc_id):
                total, of_one = asked.get(rc_id, (0, 0))
                asked[rc_id] = (total + amount, max(of_one, amount))
    return asked


def _tree_batches(searcher, order, orders, asked, size):
    """Lists of root ids to walk in turn, in tree order: the first of
    ``size`` trees, each next one twice as many. Only trees that could
    serve: allowed by root_required and root_member_of, of the few that
    could serve when some class or trait asked for is held by few
    providers (Searcher.few_trees), keeping free what ``asked``
    (_asked_of_trees) needs."""
    names = searcher.names
    first_class, sign = orders[0]
    need = asked.get(first_class, (0, 0))[0]
    excluded = names.excluded_anchors

    def could_serve(key):
        return key[-1] not in excluded and order.holds(key[-1], asked)

    only = searcher.few_trees()
    if names.allowed_anchors is not None:
        only = names.allowed_anchors if only is None else (
            names.allowed_anchors.intersection(only))
    if only is not None:
        ordered = sorted(key for key in map(order.key_of, only)
                         if key is not None and could_serve(key))
        while ordered:
            yield [key[-1] for key in ordered[:size]]
            ordered = ordered[size:]
            size *= 2
        return
    # Only keys keeping at least ``need`` of the first class: from the
    # first (pack), or up to the last (spread).
    lowest = (need,) if sign > 0 and need else None
    highest = (-need, math.inf) if sign < 0 and need else None
    after = None
    while True:
        found, after = order.after(after, size, asked, lowest, highest)
        batch = [root_id for _key, root_id in found
                 if root_id not in excluded]
        if batch:
            yield batch
        if after is None or len(found) < size:
            return
        size *= 2


def _known_classes_only(conn, rank_by):
    """``rank_by`` without the orders of classes that do not exist."""
    found = lookups.resource_class_ids(
        conn, [order.resource_class for order in rank_by.orders])
    return dataclasses.replace(rank_by, orders=tuple(
        order for order in rank_by.orders if order.resource_class in found))


def _checked_names(conn, rank_by):
    """{name: id} of the preferred traits; 400 for a class of rank_by or
    a preferred trait that does not exist."""
    classes = [order.resource_class for order in rank_by.orders]
    found = lookups.resource_class_ids(conn, classes)
    for name in classes:
        if name not in found:
            raise errors.BadRequest(
                'Invalid resource class in rank_by parameter: No such '
                'resource class %s.' % name)
    names = rank_by.trait_names
    found = lookups.trait_ids(conn, sorted(names))
    missing = sorted(names - set(found))
    if missing:
        raise errors.BadRequest('No such trait(s): %s.' % ', '.join(missing))
    return found


class _TreeFree:
    """{root id: (what the tree keeps free of each class, ...)}, from the
    holdings (db.cloud.holdings.Holdings, or None) of each class in
    order; (0, ...) for a tree holding none."""

    def __init__(self, held):
        roots = np.unique(np.concatenate(
            [found.roots for found in held if found is not None]
            or [np.zeros(0, np.int64)]))
        self._roots = roots
        self._free = []
        for found in held:
            free = np.zeros(len(roots), np.int64)
            if found is not None:
                np.add.at(free, np.searchsorted(roots, found.roots),
                          found.capacity - found.used)
            self._free.append(free)

    def __getitem__(self, root_id):
        at = int(np.searchsorted(self._roots, root_id))
        if at < len(self._roots) and self._roots[at] == root_id:
            return tuple(int(free[at]) for free in self._free)
        return (0,) * len(self._free)


class _Keys:
    """The rank keys of candidates and the bounds of trees."""

    def __init__(self, conn, rank_by, trait_ids, searcher, choices):
        self.choices = choices
        self.read = searcher.snapshot
        self.rank_by = rank_by
        #: The preferred traits as ids: of the root, and of each group.
        self.root_preferred = frozenset(
            trait_ids[name] for name in rank_by.root_preferred)
        self.preferred = {suffix: frozenset(trait_ids[name] for name in names)
                          for suffix, names in rank_by.preferred.items()}
        #: {provider id: its preferred traits' ids}.
        self.owners = db.traits_of_providers_among(conn, set(
            trait_ids.values()))
        class_ids = searcher.names.class_ids
        #: [(rc id, rc name, 1 for pack or -1 for spread)], in order.
        self.orders = [(class_ids[order.resource_class],
                        order.resource_class, order.sign)
                       for order in rank_by.orders]
        #: {root id: (free of each order's class in the tree, ...)}.
        self.tree_free = self._every_tree_free(searcher.explained_root)

    def _every_tree_free(self, root):
        """tree_free of every tree (of the tree ``root`` only, if not
        None)."""
        held = self.read.capacities({rc for rc, _n, _s in self.orders},
                                    root_id=root)
        return _TreeFree([held.get(rc_id) for rc_id, _n, _s in self.orders])

    def traits(self, provider_id):
        """The ids of the preferred traits ``provider_id`` has."""
        return self.owners.get(provider_id, frozenset())

    def _root_preferred(self, anchor):
        wanted = self.root_preferred
        return len(wanted & self.traits(anchor)) if wanted else 0

    def bound(self, choice, anchor):
        """A key no candidate of the tree ``anchor`` under ``choice`` can
        beat (each term at its best)."""
        result = choice.result
        preferred = self._root_preferred(anchor)
        wanted = self.preferred
        for group in result.groups:
            names = wanted.get(group.suffix)
            if not names:
                continue
            options = group.by_anchor[anchor]
            if group.spread:
                offered = frozenset().union(*(
                    self.traits(p) for providers in options.values()
                    for p in providers))
                preferred += len(names & offered)
            else:
                preferred += max(len(names & self.traits(p))
                                 for p in options)
        terms = []
        for (rc_id, _name, sign), free in zip(self.orders,
                                              self.tree_free[anchor]):
            most = least = 0
            for group in result.groups:
                amount = group.amounts.get(rc_id)
                if amount is None:
                    continue
                most += amount
                options = group.by_anchor[anchor]
                if group.spread:
                    options = options[rc_id]
                # Unless a sharing provider of another tree may give it.
                if all(result.root_of(p) == anchor for p in options):
                    least += amount
            # spread: at best the tree gives least; pack: at best most.
            taken = most if sign > 0 else least
            terms.append(sign * (free - taken))
        return (*choice.alternative.rank, -preferred, 0, *terms, anchor, -1)

    def of_tree(self, choice, anchor, candidates):
        """The keys of ``candidates``, every candidate of the tree
        ``anchor`` under ``choice`` in generation order."""
        wanted = self.preferred
        root_of = choice.result.root_of
        root_preferred = self._root_preferred(anchor)
        partial = []
        for index, candidate in enumerate(candidates):
            preferred = root_preferred
            for suffix, providers in candidate.mappings.items():
                names = wanted.get(suffix)
                if names:
                    preferred += len(names & frozenset().union(
                        *(self.traits(p) for p in providers)))
            terms = []
            for (_rc, name, sign), free in zip(self.orders,
                                               self.tree_free[anchor]):
                taken = sum(resources.get(name, 0) for provider, resources
                            in candidate.allocations.items()
                            if root_of(provider) == anchor)
                terms.append(sign * (free - taken))
            partial.append((-preferred, tuple(terms), index))
        rounds = collections.Counter()
        keys = [None] * len(partial)
        for negative_preferred, terms, index in sorted(partial):
            keys[index] = (*choice.alternative.rank, negative_preferred,
                           rounds[negative_preferred], *terms, anchor,
                           index)
            rounds[negative_preferred] += 1
        return keys

    def explain(self, chosen, walked):
        """The RankExplanation of the ``chosen`` (key, candidate, choice)
        triples."""
        sets = len(self.rank_by.alternatives)
        uuids = self.read.uuids_read(
            {candidate.anchor for _key, candidate, _choice in chosen})
        shown = []
        for key, candidate, choice in chosen:
            anchor = candidate.anchor
            terms = key[sets + 2:sets + 2 + len(self.orders)]
            shown.append(KeyExplanation(
                choice.alternative.used, -key[sets], key[sets + 1],
                {name: sign * term for (_rc, name, sign), term
                 in zip(self.orders, terms)},
                uuids[anchor], key[-1], self._skipped(choice, anchor)))
        return RankExplanation(key_names(self.rank_by), walked, shown)

    def _skipped(self, used, anchor):
        """Skipped, for each choice before ``used`` in the tree
        ``anchor``."""
        skipped = []
        for choice in self.choices:
            if choice is used:
                break
            names = choice.alternative.used
            if anchor not in choice.anchors:
                skipped.append(Skipped(names, 'trees',
                                       choice.missing_group(anchor)))
            else:
                skipped.append(Skipped(names,
                                       choice.combiner.dropped_by(anchor)))
        return skipped


def key_names(rank_by):
    """The names of the terms of the rank key of ``rank_by`` (a
    rank_query.Ranking), in order."""
    return (['alternatives', 'preferred', 'round']
            + [str(order) for order in rank_by.orders] + ['tree', 'index'])


def _negated(key):
    return tuple(-term for term in key)


class _Best:
    """The best ``bound`` (key, candidate, choice) triples seen (all of
    them with no bound). A request made only of sharing providers can
    come from several trees: the one with the best key is kept."""

    def __init__(self, bound):
        self.bound = bound
        #: Max-heap of (negated key, sequence number).
        self._heap = []
        #: {sequence number: (key, candidate, choice)} of those kept.
        self._kept = {}
        #: {identity of a sharing-only request: (key, sequence number)}.
        self._shared = {}
        self._sequence = itertools.count()

    def add(self, key, candidate, choice, identity):
        number = next(self._sequence)
        if identity is not None:
            before = self._shared.get(identity)
            if before is not None:
                if before[0] <= key:
                    return
                self._kept.pop(before[1], None)
            self._shared[identity] = (key, number)
        self._kept[number] = (key, candidate, choice)
        heapq.heappush(self._heap, (_negated(key), number))
        if self.bound is not None:
            while len(self._kept) > self.bound:
                _negative, dropped = heapq.heappop(self._heap)
                self._kept.pop(dropped, None)

    def full(self):
        return self.bound is not None and len(self._kept) >= self.bound

    def worst(self):
        """The worst key kept."""
        heap = self._heap
        while heap[0][1] not in self._kept:
            heapq.heappop(heap)
        return self._kept[heap[0][1]][0]

    def in_order(self):
        return sorted(self._kept.values(), key=lambda kept: kept[0])


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


def _best(choices, keys, bound):
    """([(key, candidate, choice)] best first, at most ``bound``; how many
    trees were walked): trees walked best bound first (see the module's
    docstring)."""
    order = {id(choice): index for index, choice in enumerate(choices)}
    first = {}
    for choice in choices:
        for anchor in choice.anchors:
            first.setdefault(anchor, choice)
    trees = [(keys.bound(choice, anchor), order[id(choice)], anchor)
             for anchor, choice in first.items()]
    heapq.heapify(trees)
    best = _Best(bound)
    walked = 0
    while trees:
        tree_bound, index, anchor = trees[0]
        if best.full() and tree_bound > best.worst():
            break
        heapq.heappop(trees)
        choice = choices[index]
        walked += 1
        candidates = list(choice.combiner.for_anchor(anchor, every=True))
        if not candidates:
            later = next((i for i in range(index + 1, len(choices))
                          if anchor in choices[i].anchors), None)
            if later is not None:
                heapq.heappush(trees, (keys.bound(choices[later], anchor),
                                       later, anchor))
            continue
        sharing = choice.result.sharing
        for key, candidate in zip(keys.of_tree(choice, anchor, candidates),
                                  candidates):
            best.add(key, candidate, choice, _identity(candidate, sharing))
    return best.in_order(), walked
