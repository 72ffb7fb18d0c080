"""The best-first walk of a ranked request (engine/ranked.py): the trees
walked best bound first, a candidate entering the answer once no bound
left can beat its key, until the answer holds ``limit`` candidates.

A tree searched gets an optimistic key (rank_keys.RankKeys.bound), a
bound no candidate of the tree can beat, made from what the search found
(each provider's capacity and usage, the options of each group). The
trees not yet searched wait in *streams* (:class:`_Stream`), each a run
of the cloud's tree order (db.cloud.orders: by what a tree keeps free of
the classes of ``rank_by``) whose trees share one bound on their
preferred count (what preferred traits their providers, and every
sharing provider, have): the bound of a stream's next tree, which no
later tree of the stream beats, stands for all of them, and when it is
the best left, the next window of the stream is searched. With a limit,
only the windows holding the trees that can rank are searched; without
one (or with explain=<uuid>) each choice of alternatives searches the
whole cloud (the one tree) at once.

The choice of alternatives' rank leads the key, so every tree and stream
of a choice is walked or left behind before those of the next: a tree
walked without a candidate under a choice is met again in the next
choice's streams, and a tree with one is skipped there.
"""

import collections
import heapq
import itertools
import operator
import typing

import numpy as np

from placement_lite.db import cloud
from placement_lite.engine import combine
from placement_lite.engine import explain
from placement_lite.engine import rank_keys
from placement_lite.engine import reuse
from placement_lite.engine import search
from placement_lite.engine import walks


class _Choice:
    """The search of one window under one choice of alternatives (the
    ``index``-th): its result and combiner."""

    def __init__(self, index, alternative, searcher, result, tally,
                 roomiest_first):
        self.index = index
        self.alternative = alternative
        self.searcher = searcher
        self.result = result
        self.combiner = combine.Combiner(
            result, alternative.request, parents=searcher.view.parents,
            tally=tally,
            roomiest_first=roomiest_first)


class _Tree:
    """A tree searched under one choice of alternatives, in the walk: by
    its bound in its stream until its own is made
    (rank_keys.RankKeys.bound), unless
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
        key = rank_keys.key(rank, preferred, taken, self.fixed, self.anchor,
                   self.index)
        rounds[preferred] = taken + 1
        self.index += 1
        return key, rank_keys.key(rank, self.most, rounds.get(self.most, 0),
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


class _Batch(typing.NamedTuple):
    """Trees a stream searches at once: the window, and (key, root id) of
    each tree in tree order (None for the whole cloud or one named
    tree)."""

    window: typing.Optional[cloud.Window]
    keys: typing.Optional[list]


class _Stream:
    """The trees of one choice of alternatives not searched yet that share
    one bound on their preferred count and whether a sharing provider
    holding a class of rank_by serves them (BestFirstWalk._parts): the batches
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
    next one's bound (BestFirstWalk._take_run)."""

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
    (BestFirstWalk._take_later)."""

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
        return rank_keys.key(self.choice.alternative.rank, self.most, 1, terms,
                    anchor, 1)


class _Offered(typing.NamedTuple):
    """A candidate found before its turn in the answer: it waits in the
    heap by its key."""

    candidate: object
    choice: _Choice
    identity: object


class BestFirstWalk:
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

    def __init__(self, asked, request, alternatives, searchers, bound,
                 tally, roomiest_first, first_window, counted):
        """``alternatives``: rank_query.alternative_requests of
        ``request``, ``searchers`` a search.Searcher of each."""
        self.bound = bound
        self.tally = tally
        self.roomiest_first = roomiest_first
        self.first_window = first_window
        self.counted = counted
        self.alternatives = alternatives
        self.searchers = searchers
        self.class_ids = self.searchers[0].names.class_ids
        self.read = self.searchers[0].view
        #: For each choice, the first candidates kept of its trees whose
        #: candidates come in key order (reuse.kept_for's, or None).
        self.kept = [reuse.kept_for(self.read,
                                    asked.key('first in key order', index),
                                    alternative.request, None, tally)
                     for index, alternative in enumerate(self.alternatives)]
        #: ((rc id, sign), ...) of rank_by: how the tree order goes.
        self.orders = request.ranking.free_terms(self.class_ids)
        self.order = self.read.tree_order(self.orders)
        self.keys = rank_keys.RankKeys(request.ranking, self.read, self.order)
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
        return walks.Ranked([candidate for _key, candidate, _choice in chosen],
                      self.roots, self.read, self.combiners,
                      self._explain(chosen, self.walked)
                      if self.tally.active else None)

    def _offer(self, key, candidate, choice):
        """Put ``candidate`` (of ``choice``, by ``key``) in the answer if
        nothing in the heap can beat it, else in the heap. Whatever is
        being walked has put in the heap what it may still give."""
        heap = self._heap
        identity = combine.sharing_identity(candidate, choice.result.sharing)
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
            self._push(rank_keys.key(rank, most, 0, terms, anchor, 1),
                       _Tree.after_first(choice, anchor, terms, others, most,
                                         preferred))
        self._offer(rank_keys.key(rank, preferred, 0, terms, anchor, 0), first,
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
            window = None if root is None else cloud.Window(root, root,
                                                               False)
            self._search(_Stream(index, iter([_Batch(window, None)]), rank))
            return
        request = self.alternatives[index].request
        try:
            only = walks.only_trees(searcher)
        except search.NoCandidates:
            return
        asked = walks.asked_of_trees(request, self.class_ids,
                                     self.read.sharing_holders)
        streams = 0
        for preferred, served, among, outside in self._parts(request):
            batches = (_Batch(cloud.Window.of_roots(
                [root_id for _key, root_id in keys]), keys)
                for keys in walks.tree_batches(
                    searcher, self.order, self.orders, asked,
                    self.first_window, only, among, outside))
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
        held = np.concatenate(list(by_most.values()) or [walks.NO_ROOTS])
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
            self._served_trees = self.read.trees_served_by(
                holders) if holders else walks.NO_ROOTS
        return self._served_trees

    def _shifts(self, request, served):
        """(sign x the most a candidate of ``request`` surely takes from
        its own tree of each class of rank_by, ...): what a tree's key in
        the tree order moves by in its bound (see
        rank_keys.RankKeys.bound). Where a sharing provider holding the
        class serves the tree (``served``), it may come from outside the
        tree."""
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
                         self.tally, self.roomiest_first)
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
            shown.append(explain.KeyExplanation(
                choice.alternative.used, -key[sets], key[sets + 1],
                {name: sign * term for (name, sign), term
                 in zip(orders, terms)},
                uuids[anchor], key[-1],
                self._skipped(choice.index, anchor, unserved)))
        return explain.RankExplanation(rank_keys.key_names(self.keys.rank_by),
                                       walked, shown)

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
                skipped.append(explain.Skipped(names, 'trees',
                                       unserved[index].get(anchor)))
            else:
                skipped.append(explain.Skipped(names,
                                       choice.combiner.dropped_by(anchor)))
        return skipped


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
