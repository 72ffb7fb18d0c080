"""Phase two of the engine: allocation requests, generated lazily.

Under one anchor every group offers a list of choices (see ``search``);
an allocation request takes one choice per *need* (one need per suffixed
group, one per resource class of the unsuffixed group) so that:

* summed amounts per provider and class stay within free capacity and
  max_unit (each amount is counted once per request);
* the providers picked for the unsuffixed group together have its
  required traits;
* with ``group_policy=isolate`` suffixed groups use distinct providers
  (with ``isolate:<suffixes>``, 1.41, the groups named);
* each ``same_subtree`` set of groups lies under one of its providers,
  and its ``!`` groups (1.41) outside the subtree of that provider;
* before 1.29 (tree-unaware), no two providers of one tree give resources.

These are the rules explain reports, in that order (Combiner.rules): for
a tree without any request, explain walks it again with fewer rules to
find the first that drops it.

The search is a depth-first walk over the needs that checks each
constraint as soon as the needs it depends on are filled, so a dead branch
is cut at once and the walk only costs what the caller consumes: taking
the first N requests does about N requests' worth of work. A request
with only the unsuffixed group needs no walk: its needs cannot clash, so
its requests are the product of the needs' choices, filtered by traits.

Order (documented in api-ref/allocation_candidates.md): anchors by
ascending internal id (creation order); within an anchor, needs in query
order (the unsuffixed group first, one need per class in query order),
choices by ascending provider id, the last need varying fastest. With
``roomiest_first`` (a bounded request, where each tree gives its first
request before any gives a second) the choices of a need go by free
capacity of its classes, most first, ties by id: a scheduler that claims
each host's first request then takes from the roomiest provider of the
tree, not from the one created first (a root holding a little memory,
filled after a few instances while its NUMA nodes stay empty).
``depth-first`` exhausts an anchor before the next; ``breadth-first``
takes one request from each anchor in turn.
"""

import collections
import dataclasses
import itertools
import typing

from placement_lite.engine import explain

#: The most entries each of the walk's caches by provider keeps (what a
#: provider gives in a need, its set as a group's mapping, the sets of the
#: providers chosen together, lineages) before it is emptied. Candidates
#: come tree after tree, a tree's providers asked for together, so the
#: last few thousand serve as well as every provider's. Kept whole, they
#: grow with the cloud: at 20,000 hosts an answer without a limit
#: (isolate_all) held 43 MB more at its peak, and took longer per
#: candidate than at 5,000 hosts (docs/benchmark.md, "Growth without a
#: limit").
KEPT_PER_PROVIDER = 4096


@dataclasses.dataclass(slots=True)
class Candidate:
    anchor: int
    #: {provider id: {resource class name: amount}}; the inner dicts may
    #: be shared between candidates: never change them.
    allocations: dict
    #: {suffix: {provider ids}}; the sets may be shared between
    #: candidates: never change them.
    mappings: dict
    #: (how, its JSON) once rendered: the answer writes it once however
    #: many answers give the candidate (the Cloud keeps some: db.cloud.firsts).
    rendered: tuple = dataclasses.field(default=None, compare=False,
                                        repr=False)


@dataclasses.dataclass
class _Need:
    suffix: str
    amounts: dict
    options: list


class Combiner:
    """Generates the allocation requests of a search result."""

    def __init__(self, result, request, parents=None, shuffle=None,
                 seen=None, tally=explain.NOT_TALLIED, roomiest_first=False):
        """``parents(root_ids)`` returns {provider id: parent id} for those
        trees (needed for same_subtree); ``shuffle``, when given, is
        applied to anchors and choices (randomized candidates); ``seen``
        is shared by the combiners of successive windows of trees;
        ``tally`` is told which trees were walked and what dropped them."""
        self.result = result
        #: The suffixes of the groups that must use distinct providers.
        self.isolated = request.isolated
        self.same_subtrees = [set(s) for s in request.same_subtrees]
        self.subtree_exclusions = request.subtree_exclusions
        #: Before 1.29, no two providers of one tree give resources.
        self.nested_aware = request.nested_aware
        self.shuffle = shuffle
        self.roomiest_first = roomiest_first
        self._parents_of_trees = parents
        self._parents = None
        #: {provider id: frozenset of it and its ancestors}, made as asked.
        self._lineages = {}
        #: Requests made only of sharing providers already produced.
        self.seen = set() if seen is None else seen
        #: how many choices were tried: lets tests prove work is bounded.
        self.steps = 0
        self._plan = None
        asked_by = collections.Counter(
            rc_id for group in result.groups for rc_id in group.amounts)
        #: Classes that several needs ask for (see _enough_in_tree).
        self._shared_classes = {rc_id for rc_id, needs in asked_by.items()
                                if needs > 1}
        groups = result.groups
        self._lone_spread_group = (len(groups) == 1 and groups[0].spread
                                   and self.nested_aware)
        if self._lone_spread_group:
            #: {class name: amount} of each need of the lone group, in need
            #: order: one dict per need, shared by the requests built (see
            #: Candidate.allocations).
            self._lone_group_takes = [
                {result.class_names[rc_id]: amount}
                for rc_id, amount in groups[0].amounts.items()]
            #: {(id of a dict given, id of another): the two joined}.
            self._joined = {}
        spread = next((group for group in groups if group.spread), None)
        #: The rules a request meets, in explain's order.
        self.rules = tuple(
            ['capacity']
            + (['required_traits'] if spread and spread.required_trait_ids
               else [])
            + (['group_policy'] if self.isolated else [])
            + (['same_subtree'] if self.same_subtrees else []))
        self.tally = tally
        tally.rules(self.rules)

    def plan(self, needs):
        """The _Plan of every walk, made for the first."""
        if self._plan is None:
            self._plan = _Plan(self, needs)
        return self._plan

    def offer(self, anchor):
        """What the search offers each group under ``anchor``: all of
        the result ``anchor``'s requests depend on, besides what the
        store keeps of the providers named (see engine.reuse)."""
        return tuple([group.by_anchor[anchor] for group in self.result.groups])

    def anchors(self):
        anchors = list(self.result.anchors)
        if self.shuffle:
            self.shuffle(anchors)
        return anchors

    def generate(self, strategy='depth-first'):
        anchors = self.anchors()
        if strategy == 'breadth-first':
            return round_robin(self.for_anchor(a) for a in anchors)
        return itertools.chain.from_iterable(
            self.for_anchor(a) for a in anchors)

    def _needs(self, anchor):
        needs = []
        for group in self.result.groups:
            choices = group.by_anchor[anchor]
            if group.spread:
                for rc_id, amount in group.amounts.items():
                    needs.append(_Need('', {rc_id: amount}, choices[rc_id]))
            else:
                needs.append(_Need(group.suffix, group.amounts, choices))
        if self.shuffle:
            # Copies: the search result's lists serve every anchor.
            for need in needs:
                need.options = list(need.options)
                self.shuffle(need.options)
        elif self.roomiest_first:
            capacities = self.result.capacities
            for need in needs:
                if len(need.options) > 1:
                    held = [capacities[rc_id] for rc_id in need.amounts]
                    need.options = sorted(need.options, key=lambda p: [
                        c[p].used - c[p].capacity for c in held])
        return needs

    def _enough_in_tree(self, needs):
        """Cheap necessary test: for each class asked by several needs, the
        distinct providers offering it have enough free capacity in all.
        (A class asked by one need needs no test: the search only offers
        providers with room for its amount.)"""
        if not self._shared_classes:
            return True
        asked = collections.Counter()
        offered = collections.defaultdict(set)
        for need in needs:
            for rc_id, amount in need.amounts.items():
                if rc_id in self._shared_classes:
                    asked[rc_id] += amount
                    offered[rc_id].update(need.options)
        capacities = self.result.capacities
        for rc_id, total in asked.items():
            free = sum(capacities[rc_id][p].free for p in offered[rc_id])
            if free < total:
                return False
        return True

    def _ensure_parents(self):
        """Load, in one query, the parents in every tree whose providers
        the result offers under its anchors (one window of trees when the
        search was windowed)."""
        if self._parents is not None:
            return
        self._parents = self._parents_of_trees(self.result.trees_named())

    def for_anchor(self, anchor, every=False):
        """Lazily yield every allocation request under ``anchor``; with
        ``every``, also those made only of sharing providers that an
        earlier anchor gave (ranking keeps the best of them)."""
        requests = self._requests(anchor, self.rules,
                                  None if every else self.seen)
        if self.tally.active:
            return self._tallied(anchor, requests)
        return requests

    def _requests(self, anchor, rules, seen):
        """The requests under ``anchor`` meeting ``rules`` (see
        Combiner.rules); ``seen`` (None: every request) keeps requests
        made only of sharing providers from being given twice."""
        needs = self._needs(anchor)
        if self._lone_spread_group:
            yield from self._product(anchor, needs, rules, seen)
            return
        if 'capacity' in rules and not self._enough_in_tree(needs):
            return
        if self.same_subtrees:
            self._ensure_parents()
        yield from _NeedWalk(self, anchor, needs, rules, seen).run()

    def _tallied(self, anchor, requests):
        """``requests``, telling the tally that ``anchor`` was walked and,
        when it gives none, which rule dropped it."""
        given = False
        for request in requests:
            if not given:
                given = True
                self.tally.walked(anchor, None)
            yield request
        if not given:
            self.tally.walked(anchor, self.dropped_by(anchor))

    def dropped_by(self, anchor):
        """The first rule such that no request under ``anchor`` meets it
        and every rule before it; None when every rule is met (its
        requests were all given by an earlier tree)."""
        for end in range(1, len(self.rules) + 1):
            if next(self._requests(anchor, self.rules[:end], None),
                    None) is None:
                return self.rules[end - 1]
        return None

    def _product(self, anchor, needs, rules, seen):
        """The requests of a lone unsuffixed group: every choice of one
        provider per class. No choice can clash with another (each class
        is asked once, and the search only offers providers with room for
        their amount), so only the group's traits are checked."""
        group = self.result.groups[0]
        takes = self._lone_group_takes
        required = (group.required_trait_ids if 'required_traits' in rules
                    else None)
        owners = group.trait_owners
        for chosen in itertools.product(*(need.options for need in needs)):
            self.steps += 1
            if required:
                offered = set().union(*(owners.get(p, ()) for p in chosen))
                if not all(alternatives & offered
                           for alternatives in required):
                    continue
            allocations = {}
            for provider, take in zip(chosen, takes):
                held = allocations.get(provider)
                allocations[provider] = take if held is None else (
                    self._joined_takes(held, take))
            candidate = self.candidate(anchor, allocations,
                                       {'': set(chosen)}, chosen, seen)
            if candidate is not None:
                yield candidate

    def _joined_takes(self, held, take):
        """{**held, **take}: what one provider gives in several needs of
        the lone group, one dict for every request giving the same (see
        Candidate.allocations)."""
        key = (id(held), id(take))
        joined = self._joined.get(key)
        if joined is None:
            # Kept with the two: their ids stay theirs.
            joined = self._joined[key] = ({**held, **take}, held, take)
        return joined[0]

    def candidate(self, anchor, allocations, mappings, chosen, seen):
        """The Candidate, or None when it is in ``seen``: only requests
        made of sharing providers alone can be built under several
        anchors; the first is kept (``seen`` None: keep every one)."""
        sharing = self.result.sharing
        if (seen is not None and chosen[0] in sharing
                and sharing.issuperset(chosen)):
            key = (frozenset((p, rc, a) for p, classes in allocations.items()
                             for rc, a in classes.items()),
                   frozenset((s, frozenset(ps)) for s, ps in mappings.items()))
            if key in seen:
                return None
            seen.add(key)
        return Candidate(anchor, allocations, mappings)

    def in_same_subtree(self, providers):
        """True when one of ``providers`` is an ancestor (or self) of all."""
        return self.top_of(providers) is not None

    def top_of(self, providers):
        """The one of ``providers`` that is an ancestor (or self) of all
        of them, or None."""
        if len(providers) == 1:
            return next(iter(providers))
        lineages = [self._lineage(p) for p in providers]
        for top in providers:
            if all(top in lineage for lineage in lineages):
                return top
        return None

    def outside_subtree(self, top, provider):
        """True when ``provider`` is neither ``top`` nor below it."""
        return top not in self._lineage(provider)

    def _lineage(self, provider_id):
        """``provider_id`` and its ancestors: made once per provider, a
        tree's walk asks for the same few again and again."""
        lineage = self._lineages.get(provider_id)
        if lineage is None:
            parent_id = self._parents.get(provider_id)
            lineage = _room_in(self._lineages)[provider_id] = (
                frozenset((provider_id,)) if parent_id is None
                else self._lineage(parent_id) | {provider_id})
        return lineage


class _Plan:
    """What the walks of every anchor share: after which need each
    constraint can be checked (the needs have the same shape under every
    anchor, only their options differ), and what each provider gives in
    each need, made once for every anchor.

    A candidate's allocations and mappings are made of objects kept here,
    the same objects in every candidate giving the same: the answer
    renders each once (handlers/allocation_candidates.py), and tens of
    thousands of candidates hold a few thousand small dicts and sets."""

    def __init__(self, combiner, needs):
        result = combiner.result
        groups = result.groups
        self.capacities = result.capacities
        self.class_names = result.class_names
        #: {rc id: the amount all needs asking for it ask together}, of
        #: the classes several needs ask for: the only ones whose capacity
        #: the walk checks (the search offers a need only providers with
        #: room for its own amount), and only of a provider that could not
        #: give that much.
        self.asked_together = collections.Counter()
        for group in groups:
            for rc_id, amount in group.amounts.items():
                if rc_id in combiner._shared_classes:
                    self.asked_together[rc_id] += amount
        #: Per need, {provider: _Gift}.
        self.gifts = [{} for _need in needs]
        #: Per need, what each provider gives in it ({class name: amount};
        #: None in a need of a resourceless group): one dict for all.
        self.need_amounts = [
            {self.class_names[rc_id]: amount
             for rc_id, amount in need.amounts.items()}
            if need.amounts else None for need in needs]
        #: {(id of a dict of a provider's amounts, id of another): the two
        #: added up}: a provider giving in several needs.
        self._sums = {}
        #: {provider id: {provider id}}: a suffixed group's mapping.
        self._alone = {}
        #: {providers chosen: their set}: the unsuffixed group's mapping.
        self._together = {}
        needs_of = {}
        for index, need in enumerate(needs):
            needs_of.setdefault(need.suffix, []).append(index)
        #: The groups' suffixes, in need order: the keys of the mappings.
        self.suffixes = tuple(needs_of)
        #: Per need, when it is the last of its group: (the group's place
        #: in ``suffixes``, the indexes of its needs); else None.
        self.closing = [None] * len(needs)
        for place, indexes in enumerate(needs_of.values()):
            self.closing[indexes[-1]] = (place, indexes)
        self.spread_group = next((g for g in groups if g.spread), None)
        spread_needs = [i for i, s in enumerate(needs) if not s.suffix]
        self.spread_done_at = spread_needs[-1] if spread_needs else None
        suffix_need = {s.suffix: i for i, s in enumerate(needs) if s.suffix}
        self.subtrees_done_at = collections.defaultdict(list)
        for suffixes in combiner.same_subtrees:
            last = max(suffix_need[s] for s in suffixes)
            self.subtrees_done_at[last].append(sorted(suffixes))
        self.exclusions_done_at = collections.defaultdict(list)
        for inside, outside in combiner.subtree_exclusions:
            last = max(suffix_need[s] for s in inside | outside)
            self.exclusions_done_at[last].append((inside, outside))
        self.check_at = set(self.subtrees_done_at) | set(
            self.exclusions_done_at)
        if self.spread_group and self.spread_group.required_trait_ids:
            self.check_at.add(self.spread_done_at)

    def gift(self, index, need, provider):
        """The _Gift of ``provider`` in the need ``index``."""
        gift = self.gifts[index].get(provider)
        if gift is None:
            capacities = self.capacities
            checked = []
            for rc_id, amount in need.amounts.items():
                together = self.asked_together.get(rc_id)
                if together is None:
                    continue
                capacity = capacities[rc_id][provider]
                most = min(capacity.capacity - capacity.used,
                           capacity.max_unit)
                if most < together:
                    checked.append(((provider, rc_id), amount, most))
            alone = self._alone.get(provider)
            if alone is None:
                alone = _room_in(self._alone)[provider] = {provider}
            gift = _room_in(self.gifts[index])[provider] = _Gift(
                self.need_amounts[index], tuple(checked), alone)
        return gift

    def sum(self, held, given):
        """The amounts ``held`` and ``given`` (one provider's, {class name:
        amount}) added up, in that order."""
        key = (id(held), id(given))
        kept = self._sums.get(key)
        if kept is None:
            total = dict(held)
            for name, amount in given.items():
                total[name] = total.get(name, 0) + amount
            # The two kept with their sum: their ids stay theirs.
            kept = self._sums[key] = (total, held, given)
        return kept[0]

    def mapping(self, chosen, indexes):
        """The set of the providers ``chosen`` in the needs ``indexes``
        (of one group, several needs)."""
        key = tuple([chosen[index] for index in indexes])
        together = self._together.get(key)
        if together is None:
            together = _room_in(self._together)[key] = set(key)
        return together


def _room_in(cache):
    """``cache``, emptied first when it holds KEPT_PER_PROVIDER entries."""
    if len(cache) >= KEPT_PER_PROVIDER:
        cache.clear()
    return cache


class _Gift(typing.NamedTuple):
    """What a provider gives in one need."""

    #: {class name: amount} (None in a need of a resourceless group).
    amounts: typing.Optional[dict]
    #: ((provider, rc id), amount, the most it can give of that class in
    #: one request) for each class of the need that other needs ask for
    #: too, when the provider could not give what they all ask.
    checked: tuple
    #: {provider}: the mapping of a group of this one need.
    alone: set


class _NeedWalk:
    """The depth-first walk over the needs of one anchor, checking
    ``rules`` (see Combiner.rules)."""

    def __init__(self, combiner, anchor, needs, rules, seen):
        self.combiner = combiner
        self.anchor = anchor
        self.needs = needs
        self.seen = seen
        self.check_capacity = 'capacity' in rules
        self.check_traits = 'required_traits' in rules
        self.check_subtrees = 'same_subtree' in rules
        self.isolated_suffixes = (combiner.isolated if 'group_policy' in rules
                                  else frozenset())
        self.root_of = combiner.result.root_of
        plan = self.plan = combiner.plan(needs)
        self.spread_group = plan.spread_group
        self.spread_done_at = plan.spread_done_at
        self.subtrees_done_at = plan.subtrees_done_at
        self.exclusions_done_at = plan.exclusions_done_at
        self.check_at = plan.check_at
        #: {(provider, rc id): amount taken so far}, of the amounts checked
        #: (see _Gift.checked), only amounts above 0.
        self.usage = {}
        self.chosen = [None] * len(needs)
        #: The mapping of each group whose needs are chosen, in the order
        #: of plan.suffixes.
        self.mapping_sets = [None] * len(plan.suffixes)
        #: The providers of the isolated needs filled so far.
        self.isolated = set()
        self.tree_owner = {}

    def run(self):
        if not self.needs:
            candidate = self.combiner.candidate(self.anchor, {}, {}, [],
                                                self.seen)
            if candidate is not None:
                yield candidate
            return
        yield from self._fill(0, {})

    def _fill(self, index, allocations_before):
        """The requests from the need ``index`` on, the earlier needs
        chosen, giving ``allocations_before`` (never changed: each
        choice here adds to a copy)."""
        need = self.needs[index]
        last = index == len(self.needs) - 1
        plan = self.plan
        gifts = plan.gifts[index]
        closing = plan.closing[index]
        mapping_sets = self.mapping_sets
        usage = self.usage
        isolate = need.suffix in self.isolated_suffixes
        one_per_tree = bool(need.amounts) and not self.combiner.nested_aware
        check_capacity = self.check_capacity
        for provider in need.options:
            gift = gifts.get(provider)
            if gift is None:
                gift = plan.gift(index, need, provider)
            checked = gift.checked if check_capacity else ()
            self.combiner.steps += 1
            if checked and not _fits(usage, checked):
                continue
            if isolate and provider in self.isolated:
                continue
            if one_per_tree and not self._own_tree(provider):
                continue
            for key, amount, _limit in checked:
                usage[key] = usage.get(key, 0) + amount
            if isolate:
                self.isolated.add(provider)
            self.chosen[index] = provider
            if index not in self.check_at or self._consistent(index):
                allocations = dict(allocations_before)
                given = gift.amounts
                if given is not None:
                    # In the order of the needs where each provider first
                    # gives, its amounts added up.
                    held = allocations.get(provider)
                    allocations[provider] = (given if held is None
                                             else plan.sum(held, given))
                if closing is not None:
                    place, indexes = closing
                    mapping_sets[place] = (
                        gift.alone if len(indexes) == 1
                        else plan.mapping(self.chosen, indexes))
                if last:
                    candidate = self.combiner.candidate(
                        self.anchor, allocations,
                        dict(zip(plan.suffixes, mapping_sets)), self.chosen,
                        self.seen)
                    if candidate is not None:
                        yield candidate
                else:
                    yield from self._fill(index + 1, allocations)
            self.chosen[index] = None
            for key, amount, _limit in checked:
                left = usage[key] - amount
                if left:
                    usage[key] = left
                else:
                    del usage[key]
            if isolate:
                self.isolated.discard(provider)
            if one_per_tree:
                self._leave_tree(provider)

    def _own_tree(self, provider):
        """Before 1.29 one provider per tree gives resources: take the
        tree for ``provider`` unless another provider has it."""
        root = self.root_of(provider)
        owner = self.tree_owner.get(root)
        if owner is not None and owner[0] != provider:
            return False
        self.tree_owner[root] = (provider, owner[1] + 1 if owner else 1)
        return True

    def _leave_tree(self, provider):
        root = self.root_of(provider)
        owner = self.tree_owner[root]
        if owner[1] == 1:
            del self.tree_owner[root]
        else:
            self.tree_owner[root] = (provider, owner[1] - 1)

    def _consistent(self, index):
        if (self.check_traits and index == self.spread_done_at
                and self.spread_group.required_trait_ids):
            owners = self.spread_group.trait_owners
            offered = set()
            for need, provider in zip(self.needs, self.chosen):
                if not need.suffix:
                    offered |= owners.get(provider, set())
            if not all(alternatives & offered for alternatives
                       in self.spread_group.required_trait_ids):
                return False
        if not self.check_subtrees:
            return True
        combiner = self.combiner
        for suffixes in self.subtrees_done_at.get(index, ()):
            if not combiner.in_same_subtree(self._providers_of(suffixes)):
                return False
        for inside, outside in self.exclusions_done_at.get(index, ()):
            top = combiner.top_of(self._providers_of(inside))
            if not all(combiner.outside_subtree(top, provider)
                       for provider in self._providers_of(outside)):
                return False
        return True

    def _providers_of(self, suffixes):
        """The providers chosen for the groups ``suffixes``."""
        return {provider for need, provider in zip(self.needs, self.chosen)
                if need.suffix in suffixes}


def _fits(usage, checked):
    """Whether the amounts ``checked`` (see _Gift) fit beside ``usage``."""
    for key, amount, limit in checked:
        if usage.get(key, 0) + amount > limit:
            return False
    return True


def round_robin(generators):
    """One item from each generator in turn, starting each lazily."""
    live = collections.deque()
    for generator in generators:
        item = next(generator, _DONE)
        if item is not _DONE:
            yield item
            live.append(generator)
    while live:
        generator = live.popleft()
        item = next(generator, _DONE)
        if item is not _DONE:
            yield item
            live.append(generator)


_DONE = object()


def sharing_identity(candidate, sharing):
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
