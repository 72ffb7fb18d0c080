"""can_split (microversion 1.44): one class's amount taken from several
providers of a tree, and which splits a tree offers.

The rule (api-ref/extensions.md, "1.44: can_split"): a class a group may
split is split only in a tree where no provider serving the group there
can take its whole amount; then only over the fewest providers that can
make it up together, sharing providers never among them; each set of
that many providers over which a valid split exists gives one split, its
providers roomiest first (the most each can give toward the amount, then
creation order), each taking as much as it can such that the providers
after it can still take the rest, in their steps. The splits of a tree
come in the order of their sets: the combinations of the providers that
may take a part, listed roomiest first, in lexicographic order.

"As much as it can such that the rest can still be taken" is the
lexicographically greatest split of the set: it exists whenever any
split of the set does, and where nothing gets in the way (no step_size,
no min_unit above 1) it is plain filling, the roomiest all it can, then
the next. Plain filling alone would miss splits: 6 over a provider that
can give 5 in steps of 1 and one that gives only 4 fills 5 and leaves 1
that the second cannot take, where 2 + 4 is a split.

The search (``search``) finds, per tree, who may take a part; a tree's
:class:`Splits` are made as the combination reads them (``combine``),
so a tree whose first candidate is all a bounded answer takes costs the
first split only.
"""

import functools
import itertools
import math
import typing

import numpy as np


class Split:
    """One class's amount taken from several providers: ``takes``, a
    tuple of (provider id, {class name: part}) roomiest first; the dicts
    are shared by every candidate using the split (never change them)."""

    __slots__ = ('takes', 'providers')

    def __init__(self, takes):
        self.takes = takes
        self.providers = frozenset(provider for provider, _take in takes)

    def __repr__(self):
        return 'Split(%r)' % (self.takes,)


class _Units(typing.NamedTuple):
    """What one provider may give as a part of an amount."""

    provider: int
    #: Its smallest part: min_unit rounded up to a step.
    least: int
    #: Its largest part toward the amount: the least of max_unit, its
    #: free capacity and the amount, rounded down to a step.
    most: int
    step: int


class Splits:
    """The splits of ``amount`` of one class in one tree, over the
    providers of ``units`` (_Units: those that may take a part), in the
    rule's order, made as they are read: iterated again and again, each
    split is made once. ``providers``: the providers that may take a
    part."""

    def __init__(self, class_name, amount, units):
        self.providers = sorted(each.provider for each in units)
        self._class_name = class_name
        self._amount = amount
        self._made = []
        listed = sorted(units, key=lambda each: (-each.most, each.provider))
        #: The most the providers could give together, each its largest
        #: part (explain's ``largest`` of a tree without a split).
        self.most_together = sum(units.most for units in listed)
        self._making = self._splits(listed)

    def __iter__(self):
        index = 0
        while True:
            if index == len(self._made):
                if self._making is None:
                    return
                made = next(self._making, None)
                if made is None:
                    self._making = None
                    return
                self._made.append(made)
            yield self._made[index]
            index += 1

    def __bool__(self):
        """Whether a valid split exists."""
        return next(iter(self), None) is not None

    def _splits(self, listed):
        """Each Split over the fewest of ``listed`` (_Units, roomiest
        first), in the rule's order."""
        amount = self._amount
        most_of_roomiest = list(itertools.accumulate(
            units.most for units in listed))
        for count in range(2, len(listed) + 1):
            if most_of_roomiest[count - 1] < amount:
                # Not even the roomiest can make it up.
                continue
            found = False
            for chosen in itertools.combinations(listed, count):
                parts = greatest_parts(chosen, amount)
                if parts is not None:
                    found = True
                    yield Split(tuple(
                        (units.provider, {self._class_name: part})
                        for units, part in zip(chosen, parts)))
            if found:
                return


def greatest_parts(chosen, amount):
    """The lexicographically greatest parts of ``amount`` the providers
    ``chosen`` (_Units, in order) can give, each at least its least, at
    most its most, in its steps, adding up to ``amount``; None when there
    are none."""
    count = len(chosen)
    # What chosen[index:] give at least and at most, by index.
    least_after = list(itertools.accumulate(
        (units.least for units in reversed(chosen)), initial=0))[::-1]
    most_after = list(itertools.accumulate(
        (units.most for units in reversed(chosen)), initial=0))[::-1]
    if not least_after[0] <= amount <= most_after[0]:
        return None
    if all(units.step == 1 for units in chosen):
        # Every part in steps of 1: every amount between the least and the
        # most of the providers after one can be taken by them.
        parts = []
        left = amount
        for units, least in zip(chosen, least_after[1:]):
            part = min(units.most, left - least)
            parts.append(part)
            left -= part
        return tuple(parts)
    steps_after = list(itertools.accumulate(
        (units.step for units in reversed(chosen)), math.gcd,
        initial=0))[::-1]

    @functools.cache
    def rest(index, left):
        """The greatest parts of ``left`` from chosen[index:], or None."""
        units = chosen[index]
        if index == count - 1:
            if units.least <= left <= units.most and left % units.step == 0:
                return (left,)
            return None
        part = min(units.most, left - least_after[index + 1])
        part -= part % units.step
        lowest = max(units.least, left - most_after[index + 1])
        after = steps_after[index + 1]
        while part >= lowest:
            if (left - part) % after == 0:
                found = rest(index + 1, left - part)
                if found is not None:
                    return (part,) + found
            part -= units.step
        return None

    return rest(0, amount)


def served(rc_name, amount, providers, anchors, capable, sharing):
    """Where a class a group may split can be served: (providers,
    anchors, {anchor: Splits}, {anchor left out: what its providers
    could give together}) of the (provider, anchor) pairs
    ``providers``, ``anchors`` (arrays; every provider serves the group
    but for the amount, and can give a part of it or all of it,
    ``capable``: their holdings.Holdings). In a tree where a provider can
    take ``amount`` whole, the pairs of those providers alone; in one
    where none can, those of the providers a split may take parts from
    (not ``sharing`` ones), when there is a split; other trees are left
    out."""
    if not len(providers):
        return providers, anchors, {}, {}
    free = capable.capacity - capable.used
    step = capable.step_size
    whole = capable.ids[(amount <= free) & (capable.min_unit <= amount)
                        & (amount <= capable.max_unit) & (amount % step == 0)]
    takes_whole = np.isin(providers, whole)
    if takes_whole.all():
        return providers, anchors, {}, {}
    in_whole_tree = np.isin(anchors, anchors[takes_whole])
    parts = ~in_whole_tree & ~np.isin(providers, np.fromiter(
        sharing, np.int64, len(sharing)))
    splits = {}
    left_out = {}
    part_anchors = anchors[parts]
    order = np.argsort(part_anchors, kind='stable')
    ordered = part_anchors[order]
    starts = np.concatenate(([0], np.flatnonzero(np.diff(ordered)) + 1,
                             [len(ordered)])).tolist() if len(ordered) else [0]
    part_providers = providers[parts][order]
    # Where each is among the holders, and what it may give as a part.
    sorter = np.argsort(capable.ids)
    at = sorter[np.searchsorted(capable.ids, part_providers, sorter=sorter)]
    steps = step[at]
    least = -(-capable.min_unit[at] // steps) * steps
    most = np.minimum(np.minimum(capable.max_unit[at], free[at]),
                      amount) // steps * steps
    listed = list(map(_Units._make, zip(
        part_providers.tolist(), least.tolist(), most.tolist(),
        steps.tolist())))
    plain = _plainly_split(ordered, least, most, steps, amount).tolist()
    for start, end, known in zip(starts, starts[1:], plain):
        anchor = int(ordered[start])
        found = Splits(rc_name, amount, listed[start:end])
        if known or found:
            splits[anchor] = found
        else:
            left_out[anchor] = found.most_together
    kept = takes_whole | (parts & ~np.isin(anchors, np.fromiter(
        left_out, np.int64, len(left_out))))
    return providers[kept], anchors[kept], splits, left_out


def _plainly_split(anchors, least, most, steps, amount):
    """For each tree of ``anchors`` (sorted; the providers that may take a
    part, their least and most parts and steps), whether it is known to
    have a split without making one: where every part is in steps of 1
    from 1, there is one if and only if the providers can give the
    amount together (the roomiest, as many as the amount at most, then
    can: their least adds up to no more than it; and none gives it
    alone, or it would take it whole, so they are two at least). Other
    trees are False: their Splits tell."""
    if not len(anchors):
        return np.zeros(0, bool)
    starts = np.concatenate(([0], np.flatnonzero(np.diff(anchors)) + 1))
    plain = np.logical_and.reduceat((least == 1) & (steps == 1), starts)
    return plain & (np.add.reduceat(most, starts) >= amount)


def offered(options):
    """The providers a need's ``options`` (provider ids, or Splits) name."""
    return options.providers if isinstance(options, Splits) else options


def givers(option):
    """The providers of one option: a provider id, or a Split."""
    return option.providers if type(option) is Split else (option,)
