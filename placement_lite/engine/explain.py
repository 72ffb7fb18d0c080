"""Explain (microversion 1.41): what each step of one candidates search
kept, counted as the search applies it.

The search (``search``) and the combination (``combine``) tell a Tally
what each step kept, window by window and tree by tree, with the very
collections they go on with; without explain they tell NOT_TALLIED, which
keeps nothing. ``Tally.report`` counts them into an Explanation. The steps,
their order and what each count means are defined in
api-ref/extensions.md.
"""

import dataclasses
import typing

PROVIDERS = 'providers'
TREES = 'trees'


class Step(typing.NamedTuple):
    """One step of a group: its name, and the class and amount it is
    about (class steps, and every provider step of the unsuffixed
    group)."""

    name: str
    rc_id: typing.Optional[int] = None
    amount: typing.Optional[int] = None


@dataclasses.dataclass
class StepCount:
    step: str
    #: How many providers or trees (``unit``) the step kept.
    count: int
    unit: str
    resource_class: typing.Optional[str] = None
    amount: typing.Optional[int] = None
    #: The most one provider could give (the ``largest`` step).
    largest: typing.Optional[int] = None


@dataclasses.dataclass
class Exclusion:
    """The step that left one provider out, with its numbers."""

    step: str
    resource_class: typing.Optional[str] = None
    amount: typing.Optional[int] = None
    capacity: typing.Optional[int] = None
    used: typing.Optional[int] = None
    min_unit: typing.Optional[int] = None
    max_unit: typing.Optional[int] = None
    step_size: typing.Optional[int] = None
    largest: typing.Optional[int] = None


@dataclasses.dataclass
class ProviderRow:
    uuid: str
    #: The class the row is about (unsuffixed group), or None.
    resource_class: typing.Optional[str]
    #: None when the provider passed every provider step.
    excluded_by: typing.Optional[Exclusion]


@dataclasses.dataclass
class GroupExplanation:
    suffix: str
    steps: list
    emptied_by: typing.Optional[StepCount]
    #: ProviderRows, with explain=<uuid>.
    providers: typing.Optional[list] = None


@dataclasses.dataclass
class Explanation:
    groups: list
    tree_steps: list
    trees_emptied_by: typing.Optional[StepCount]
    #: Windows of trees searched; None when every tree was searched at
    #: once (or one tree, with explain=<uuid>).
    windows: typing.Optional[int]
    walked: int
    #: The provider uuid of explain=<uuid>, or None.
    provider: typing.Optional[str]
    #: RankExplanation of a ranked request (1.42), or None.
    ranking: typing.Optional[object] = None

    def why_empty(self):
        """Why an answer is empty, in words: the step that emptied each
        group, else the tree step that emptied the trees (a claim's 409,
        1.43)."""
        reasons = ['%s: no %s left at %s' % (
            'group %s' % group.suffix if group.suffix
            else 'the unsuffixed group', group.emptied_by.unit[:-1],
            _described(group.emptied_by))
            for group in self.groups if group.emptied_by is not None]
        if not reasons and self.trees_emptied_by is not None:
            reasons.append('no tree left at %s'
                           % _described(self.trees_emptied_by))
        return reasons or ['no candidate']


def _described(step):
    """``step 'capacity' (VCPU, amount 4)``: a StepCount in words."""
    numbers = [step.resource_class] if step.resource_class else []
    numbers += ['%s %d' % (name, value) for name, value in (
        ('amount', step.amount), ('largest', step.largest))
        if value is not None]
    return "step '%s'%s" % (step.step, ' (%s)' % ', '.join(numbers)
                            if numbers else '')


class Tally:
    """What the steps of one request's search kept."""

    active = True

    def __init__(self, request):
        #: {suffix: {Step: (unit, [what it kept in each window])}}.
        self._groups = {suffix: {} for suffix in request.groups}
        #: {(suffix, Step): the most one provider could give}.
        self._largest = {}
        self._root_filters = []
        #: Windows searched (cloud.Window; None: every tree).
        self._windows = []
        self._anchors = set()
        self._rules = ()
        #: {anchor walked: the rule that dropped it, or None}.
        self._walked = {}
        #: Anchors with a candidate in a bounded answer (None: unbounded).
        self._returned = None
        self._class_names = {}
        self._view = None
        #: (uuid, root id) of the provider of explain=<uuid>, or None.
        self._explained = None

    def start(self, class_names, providers_read):
        """The request's class names and its cloud.View."""
        self._class_names = class_names
        self._view = providers_read

    def explaining(self, uuid, root_id):
        """explain=<uuid>: the tree searched alone is ``root_id``'s."""
        self._explained = (uuid, root_id)

    def root_filter(self, name, roots):
        """``roots``: every root that root_required or root_member_of
        (``name``) allows."""
        self._root_filters.append((name, roots))

    def searching(self, window):
        self._windows.append(window)

    def kept(self, suffix, step, providers):
        """``providers`` (a collection of ids) passed ``step``."""
        self._keep(suffix, step, PROVIDERS, providers)

    def kept_trees(self, suffix, step, anchors):
        self._keep(suffix, step, TREES, anchors)

    def largest(self, suffix, step, largest):
        """No provider could give ``step.amount``: at most ``largest``."""
        self._largest[suffix, step] = int(largest)
        self._keep(suffix, step, PROVIDERS, ())

    def _keep(self, suffix, step, unit, kept):
        steps = self._groups[suffix]
        if step in steps:
            steps[step][1].append(kept)
        else:
            steps[step] = (unit, [kept])

    def all_groups(self, anchors):
        self._anchors.update(anchors)

    def rules(self, names):
        """The rules every allocation request of a tree must meet, in
        order (combine.Combiner.rules)."""
        self._rules = names

    def walked(self, anchor, dropped_by):
        """The tree ``anchor`` was walked; ``dropped_by``: the first rule
        no request of it met, or None."""
        self._walked[anchor] = dropped_by

    def returned(self, anchors):
        """A bounded answer's candidates come from the trees ``anchors``."""
        self._returned = set(anchors)

    def report(self):
        """The Explanation of what the steps kept."""
        explained = self._explained
        groups = [self._group(suffix, steps, explained)
                  for suffix, steps in self._groups.items()]
        tree_steps = self._tree_steps()
        windows = self._windows
        unwindowed = explained or not windows or None in windows
        return Explanation(
            groups, tree_steps, _emptied(tree_steps),
            None if unwindowed else len(windows),
            len(self._walked), explained[0] if explained else None)

    def _group(self, suffix, steps, explained):
        counts = []
        for step, (unit, kept) in steps.items():
            counts.append(StepCount(
                step.name, len(set().union(*kept)), unit,
                self._class_names.get(step.rc_id), step.amount,
                self._largest.get((suffix, step))))
        rows = None
        if explained:
            rows = self._rows(suffix, steps, explained[1]) if steps else []
        return GroupExplanation(suffix, counts, _emptied(counts), rows)

    def _tree_steps(self):
        steps = []
        roots = None
        for name, allowed in self._root_filters:
            roots = allowed if roots is None else roots & allowed
            steps.append(StepCount(name, len(self._searched(roots)), TREES))
            if not steps[-1].count:
                return steps
        steps.append(StepCount('all_groups', len(self._anchors), TREES))
        if not self._anchors:
            return steps
        rules = self._rules
        for index, rule in enumerate(rules):
            kept = sum(1 for dropped in self._walked.values()
                       if dropped is None or rules.index(dropped) > index)
            steps.append(StepCount(rule, kept, TREES))
            if not kept:
                return steps
        if self._returned is not None:
            steps.append(StepCount('limit', len(self._returned), TREES))
        return steps

    def _searched(self, roots):
        """Those of ``roots`` in the windows searched (all of them when the
        search took every tree, or stopped before the first window)."""
        windows = self._windows
        if not windows or None in windows:
            return roots
        return {root for root in roots
                if any(window.holds(root) for window in windows)}

    def _rows(self, suffix, steps, root_id):
        """A ProviderRow for each provider of the tree ``root_id`` and each
        sharing provider holding a class of the group, in id order (for
        the unsuffixed group, one per class it looked at)."""
        held = {}
        for step, (_unit, kept) in steps.items():
            if step.name == 'resource_class':
                held[step.rc_id] = {p: c for found in kept
                                    for p, c in found.items()}
        uuids = self._view.tree_read(root_id)
        uuids.update(self._view.uuids_read(
            self._view.sharing_among(set().union(*held.values()))))
        kept_by_step = [(step, set().union(*kept))
                        for step, (unit, kept) in steps.items()
                        if unit == PROVIDERS]
        classes = [None]
        if not suffix:
            classes = list(dict.fromkeys(
                step.rc_id for step, _kept in kept_by_step
                if step.rc_id is not None)) or [None]
        rows = []
        for provider_id in sorted(uuids):
            for rc_id in classes:
                excluded = next((
                    self._exclusion(suffix, step, provider_id, held)
                    for step, kept in kept_by_step
                    if rc_id is None or step.rc_id in (None, rc_id)
                    if provider_id not in kept), None)
                rows.append(ProviderRow(uuids[provider_id],
                                        self._class_names.get(rc_id),
                                        excluded))
        return rows

    def _exclusion(self, suffix, step, provider_id, held):
        """The Exclusion of ``provider_id`` by ``step``, with the numbers
        of its inventory (as integers: MySQL sums usage as decimals)."""
        excluded = Exclusion(step.name, self._class_names.get(step.rc_id))
        if step.name in ('capacity', 'units', 'largest'):
            excluded.amount = step.amount
        if step.name == 'capacity':
            capacity = held[step.rc_id][provider_id]
            excluded.capacity = int(capacity.capacity)
            excluded.used = int(capacity.used)
        elif step.name == 'units':
            capacity = held[step.rc_id][provider_id]
            excluded.min_unit = int(capacity.min_unit)
            excluded.max_unit = int(capacity.max_unit)
            excluded.step_size = int(capacity.step_size)
        elif step.name == 'largest':
            excluded.largest = self._largest[suffix, step]
        return excluded


def _emptied(counts):
    """The first of ``counts`` that kept nothing, or None."""
    return next((count for count in counts if not count.count), None)


class _NotTallied:
    """The Tally of a request without explain: keeps nothing."""

    active = False

    def start(self, class_names, providers_read):
        pass

    def explaining(self, uuid, root_id):
        pass

    def root_filter(self, name, roots):
        pass

    def searching(self, window):
        pass

    def kept(self, suffix, step, providers):
        pass

    def kept_trees(self, suffix, step, anchors):
        pass

    def largest(self, suffix, step, largest):
        pass

    def all_groups(self, anchors):
        pass

    def rules(self, names):
        pass

    def walked(self, anchor, dropped_by):
        pass

    def returned(self, anchors):
        pass


NOT_TALLIED = _NotTallied()


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
