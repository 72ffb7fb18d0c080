"""How much the cloud holds and uses per resource class, and how many more
of a flavor it can take: ``placement-lite capacity`` (from the database)
and ``openstack placement capacity`` (from the API) compute both here.

How many more of a flavor fit is counted as allocation candidates would
place them, one claim after another until none fits: each class of the
flavor comes whole from one provider of a tree (the unsuffixed group of
a request, from microversion 1.29), a provider serves an amount when it
lies within its min_unit and max_unit, is a multiple of its step_size
and fits its free capacity, ``(total - reserved) * allocation_ratio``
less what is used. Each claim takes one amount's worth from one provider
per class, so a tree takes as many as its scarcest class allows, that
class's amounts counted provider by provider. Sharing providers are
counted as providers of their own tree, not lent to the trees of their
aggregates.
"""

import collections
import dataclasses
import typing

from placement_lite.db import capacity as capacity_db
from placement_lite.db import tables

BY_AGGREGATE = 'aggregate'
BY_TRAIT = 'trait'
#: What the report can group providers by.
GROUPINGS = (BY_AGGREGATE, BY_TRAIT)
#: The group of providers in no aggregate, or with no trait.
NO_GROUP = '-'


@dataclasses.dataclass(frozen=True)
class Inventory:
    total: int
    reserved: int
    allocation_ratio: float
    min_unit: int
    max_unit: int
    step_size: int
    used: int = 0

    @property
    def capacity(self):
        return tables.capacity_of(self.total, self.reserved,
                                  self.allocation_ratio)

    def instances_of(self, amount):
        """How many more allocations of ``amount`` this inventory takes."""
        if not (self.min_unit <= amount <= self.max_unit
                and amount % self.step_size == 0):
            return 0
        return max(0, (self.capacity - self.used) // amount)


@dataclasses.dataclass
class Provider:
    uuid: str
    root_uuid: str
    #: {class name: Inventory}.
    inventories: dict
    aggregates: frozenset = frozenset()
    traits: frozenset = frozenset()


class Row(typing.NamedTuple):
    """One line of the report: a class, within a group of providers."""

    group: str
    resource_class: str
    total: int
    reserved: int
    capacity: int
    used: int

    @property
    def free(self):
        return self.capacity - self.used

    @property
    def used_percent(self):
        return 100.0 * self.used / self.capacity if self.capacity > 0 else 0.0


def read(db, by=None):
    """Every Provider of the cloud, with its aggregates or traits when the
    report is grouped by them."""
    with db.reader() as conn:
        rows = capacity_db.provider_rows(
            conn, with_aggregates=by == BY_AGGREGATE,
            with_traits=by == BY_TRAIT)
    return from_rows(rows)


def from_rows(rows):
    """Providers from db.capacity.ProviderRows (or rows of that shape)."""
    used = {(provider_id, name): amount
            for provider_id, name, amount in rows.usages}
    inventories = collections.defaultdict(dict)
    for (provider_id, name, total, reserved, ratio, min_unit, max_unit,
         step_size) in rows.inventories:
        inventories[provider_id][name] = Inventory(
            total, reserved, ratio, min_unit, max_unit, step_size,
            int(used.get((provider_id, name), 0)))
    aggregates = collections.defaultdict(set)
    for provider_id, aggregate in rows.aggregates:
        aggregates[provider_id].add(aggregate)
    traits = collections.defaultdict(set)
    for provider_id, trait in rows.traits:
        traits[provider_id].add(trait)
    return [Provider(uuid, root_uuid, inventories[provider_id],
                     frozenset(aggregates[provider_id]),
                     frozenset(traits[provider_id]))
            for provider_id, uuid, _name, root_uuid in rows.providers]


def _groups(provider, by):
    if by is None:
        return ('',)
    names = provider.aggregates if by == BY_AGGREGATE else provider.traits
    return sorted(names) or (NO_GROUP,)


def report(providers, by=None):
    """Rows by group (``by``: None, BY_AGGREGATE or BY_TRAIT; a provider in
    several aggregates, or with several traits, counts in each) and class,
    sorted by group and class name."""
    sums = collections.defaultdict(lambda: [0, 0, 0, 0])
    for provider in providers:
        for group in _groups(provider, by):
            for name, inventory in provider.inventories.items():
                held = sums[group, name]
                held[0] += inventory.total
                held[1] += inventory.reserved
                held[2] += inventory.capacity
                held[3] += inventory.used
    return [Row(group, name, *held)
            for (group, name), held in sorted(sums.items())]


def fits(providers, resources):
    """How many more allocations of ``resources`` ({class name: amount})
    the ``providers`` take, one tree at a time (see the module's
    docstring)."""
    trees = collections.defaultdict(list)
    for provider in providers:
        trees[provider.root_uuid].append(provider)
    return sum(min(sum(provider.inventories[name].instances_of(amount)
                       for provider in tree
                       if name in provider.inventories)
                   for name, amount in resources.items())
               for tree in trees.values())


def parse_resources(text):
    """{class name: amount} from ``resources=VCPU:4,MEMORY_MB:8192`` (the
    ``resources=`` is optional); ValueError saying what is wrong."""
    spec = text[len('resources='):] if text.startswith('resources=') else (
        text)
    resources = {}
    for part in spec.split(','):
        name, sep, amount = part.partition(':')
        name = name.strip()
        if not sep or not name:
            raise ValueError('%r is not CLASS:AMOUNT (expected '
                             'resources=VCPU:4,MEMORY_MB:8192)' % part)
        if name in resources:
            raise ValueError('%s is named twice' % name)
        try:
            resources[name] = int(amount)
        except ValueError:
            raise ValueError('the amount of %s is not an integer: %r'
                             % (name, amount)) from None
        if resources[name] < 1:
            raise ValueError('the amount of %s must be at least 1, not %d'
                             % (name, resources[name]))
    return resources
