"""A brute-force oracle of can_split (1.44, api-ref/extensions.md):
random worlds of NUMA hosts, random requests, and every candidate of
every tree, made from the world's own numbers without the engine.

Worlds (tests.candidate_worlds' plain data): 2 to 4 hosts, each a root
(maybe DISK_GB, maybe VCPU) with 2 to 8 NUMA nodes (VCPU, MEMORY_MB,
sometimes DISK_GB; trait HW_NUMA_ROOT) and 0 to 4 PFs under them
(SRIOV_NET_VF, trait CUSTOM_PHYSNET_A or CUSTOM_PHYSNET_B); maybe a
sharing DISK_GB provider in an aggregate with some roots. Inventories
have reserved amounts, allocation ratios, min and max units, steps and
usage, all small, so that every split can be enumerated.

The oracle enumerates, for each tree, group and split class, every valid
split (every amount of every provider that may take a part, adding up
to the amount asked), and picks from them what the documented rule picks
(:func:`picked`): the fewest providers, one split per set of them, the
providers roomiest first, each taking as much as the rest allow. It
never calls the engine's split code.
"""

import collections
import itertools
import random

SHARES = 'MISC_SHARES_VIA_AGGREGATE'
PHYSNETS = ('CUSTOM_PHYSNET_A', 'CUSTOM_PHYSNET_B')


def _inventory(rng):
    total = rng.randint(1, 8)
    step = rng.choice((1, 1, 1, 2, 3))
    inventory = {'total': total, 'step_size': step,
                 'min_unit': rng.choice((1, 1, step, 2 * step)),
                 'max_unit': rng.choice((total, total, max(1, total - 2),
                                         16))}
    if rng.random() < 0.25:
        inventory['reserved'] = rng.randint(0, total)
    if rng.random() < 0.3:
        inventory['allocation_ratio'] = rng.choice((1.5, 2.0))
    return inventory


def capacity(inventory):
    return int((inventory['total'] - inventory.get('reserved', 0))
               * inventory.get('allocation_ratio', 1.0))


def _provider(rng, name, parent, classes, traits=()):
    inventories = {rc: _inventory(rng) for rc in classes}
    used = {}
    for rc, inventory in inventories.items():
        if rng.random() < 0.5:
            amount = rng.randint(0, capacity(inventory))
            if amount:
                used[rc] = amount
    return {'name': name, 'parent': parent, 'inventories': inventories,
            'traits': list(traits), 'aggregates': [], 'used': used}


def random_world(rng):
    """A world (see the module's docstring)."""
    world = []
    sharing = rng.random() < 0.4
    for host in range(rng.randint(2, 4)):
        name = 'h%d' % host
        classes = [rc for rc, chance in (('DISK_GB', 0.5), ('VCPU', 0.2))
                   if rng.random() < chance]
        root = _provider(rng, name, None, classes)
        if sharing and rng.random() < 0.7:
            root['aggregates'] = ['agg']
        world.append(root)
        nodes = ['%s-n%d' % (name, node) for node in range(rng.randint(2, 8))]
        for node in nodes:
            classes = [rc for rc, chance in (
                ('VCPU', 0.9), ('MEMORY_MB', 0.9), ('DISK_GB', 0.2))
                if rng.random() < chance]
            world.append(_provider(rng, node, name, classes,
                                   ['HW_NUMA_ROOT']))
        for pf in range(rng.randint(0, 4)):
            world.append(_provider(
                rng, '%s-pf%d' % (name, pf), rng.choice(nodes),
                ['SRIOV_NET_VF'], [rng.choice(PHYSNETS)]))
    if sharing:
        share = _provider(rng, 'share', None, ['DISK_GB'], [SHARES])
        share['aggregates'] = ['agg']
        world.append(share)
    # Every trait a request may name exists.
    world.append({'name': 'traits', 'parent': None, 'inventories': {},
                  'traits': list(PHYSNETS), 'aggregates': [], 'used': {}})
    return world


def random_request(rng):
    """Query pairs: the unsuffixed group, maybe VF groups _NET and _NET2
    and a NUMA group _NUMA, each maybe with can_split; group_policy,
    same_subtree, limit."""
    pairs = []
    classes = rng.sample(['VCPU', 'MEMORY_MB', 'DISK_GB'], rng.randint(0, 2))
    if classes:
        pairs.append(('resources', ','.join(
            '%s:%d' % (rc, rng.randint(2, 12)) for rc in classes)))
        split = [rc for rc in classes if rng.random() < 0.85]
        if split:
            pairs.append(('can_split', ','.join(split)))
    suffixed = []
    if rng.random() < 0.4:
        suffixed.append('_NET')
        pairs.append(('resources_NET', 'SRIOV_NET_VF:%d' % rng.randint(2, 6)))
        if rng.random() < 0.5:
            pairs.append(('required_NET', rng.choice(PHYSNETS)))
        if rng.random() < 0.7:
            pairs.append(('can_split_NET', 'SRIOV_NET_VF'))
    if rng.random() < 0.3:
        suffixed.append('_NET2')
        pairs.append(('resources_NET2',
                      'SRIOV_NET_VF:%d' % rng.randint(1, 3)))
        if rng.random() < 0.5:
            pairs.append(('can_split_NET2', 'SRIOV_NET_VF'))
    if rng.random() < 0.3:
        suffixed.append('_NUMA')
        numa = ['VCPU:%d' % rng.randint(1, 4)]
        if rng.random() < 0.5:
            numa.append('MEMORY_MB:%d' % rng.randint(1, 4))
        pairs.append(('resources_NUMA', ','.join(numa)))
        pairs.append(('required_NUMA', 'HW_NUMA_ROOT'))
        split = [part.split(':')[0] for part in numa if rng.random() < 0.5]
        if split:
            pairs.append(('can_split_NUMA', ','.join(split)))
    if not pairs:
        pairs.append(('resources', 'VCPU:%d' % rng.randint(1, 8)))
        pairs.append(('can_split', 'VCPU'))
    if len(suffixed) > 1 or rng.random() < 0.3:
        pairs.append(('group_policy', rng.choice(['none', 'isolate'])))
    if len(suffixed) > 1 and rng.random() < 0.5:
        pairs.append(('same_subtree', ','.join(rng.sample(suffixed, 2))))
    if rng.random() < 0.3:
        pairs.append(('limit', str(rng.randint(1, 4))))
    return pairs


class Model:
    """A world's numbers: each provider's place, what it can give and
    its traits, by name; ``order``: creation order (provider id order)."""

    def __init__(self, world):
        self.providers = {p['name']: p for p in world}
        self.order = {p['name']: index for index, p in enumerate(world)}
        self.parent = {p['name']: p.get('parent') for p in world}

    def root(self, name):
        while self.parent[name]:
            name = self.parent[name]
        return name

    def ancestors(self, name):
        """``name`` and its ancestors."""
        found = {name}
        while self.parent[name]:
            name = self.parent[name]
            found.add(name)
        return found

    def sharing(self, name):
        return SHARES in self.providers[name]['traits']

    def free(self, name, rc):
        provider = self.providers[name]
        return (capacity(provider['inventories'][rc])
                - provider['used'].get(rc, 0))

    def units(self, name, rc):
        inventory = self.providers[name]['inventories'][rc]
        return (inventory.get('min_unit', 1),
                inventory.get('max_unit', inventory['total']),
                inventory.get('step_size', 1))

    def valid(self, name, rc, amount):
        """Whether ``name`` can give ``amount`` of ``rc`` in one
        allocation."""
        if rc not in self.providers[name]['inventories']:
            return False
        low, high, step = self.units(name, rc)
        return (low <= amount <= high and amount % step == 0
                and amount <= self.free(name, rc))

    def parts(self, name, rc, amount):
        """Every amount below ``amount`` that ``name`` can give of ``rc``."""
        return [x for x in range(1, amount) if self.valid(name, rc, x)]

    def trees(self):
        """Root names in creation order."""
        return sorted({self.root(name) for name in self.providers},
                      key=self.order.get)

    def serving(self, root):
        """The providers that may serve a group in the tree ``root``: its
        own, and the sharing providers in an aggregate with its root."""
        own = [name for name in self.providers if self.root(name) == root]
        aggregates = set(self.providers[root]['aggregates'])
        shared = [name for name in self.providers
                  if self.sharing(name) and name not in own
                  and aggregates & set(self.providers[name]['aggregates'])]
        return sorted(own + shared, key=self.order.get)


class Group:
    def __init__(self, suffix):
        self.suffix = suffix
        self.resources = {}
        self.required = []
        self.can_split = set()


def groups_of(pairs):
    """{suffix: Group} of query ``pairs`` (the request generated above)."""
    groups = {}
    for key, value in pairs:
        for prefix in ('resources', 'required', 'can_split'):
            if key == prefix or key.startswith(prefix + '_'):
                suffix = key[len(prefix):]
                group = groups.setdefault(suffix, Group(suffix))
                if prefix == 'resources':
                    group.resources = {
                        rc: int(amount) for rc, amount in
                        (part.split(':') for part in value.split(','))}
                elif prefix == 'required':
                    group.required = value.split(',')
                else:
                    group.can_split = set(value.split(','))
                break
    return groups


def every_split(model, providers, rc, amount):
    """Every valid split of ``amount`` of ``rc`` over ``providers``: each
    {provider: part}, two providers or more, the parts adding up."""
    found = []
    choices = [(name, model.parts(name, rc, amount)) for name in providers]

    def extend(index, left, taken):
        if left == 0:
            if len(taken) > 1:
                found.append(dict(taken))
            return
        if index == len(choices):
            return
        name, parts = choices[index]
        extend(index + 1, left, taken)
        for part in parts:
            if part <= left:
                taken[name] = part
                extend(index + 1, left - part, taken)
                del taken[name]

    extend(0, amount, {})
    return found


def roominess(model, name, rc, amount):
    """The most ``name`` can give of ``rc`` in a part of ``amount``."""
    return max(model.parts(name, rc, amount))


def picked(model, splits, rc, amount):
    """The splits the documented rule picks from ``splits`` (every valid
    split of a tree), in the rule's order: only those over the fewest
    providers; one per set of providers, the greatest taken in order of
    the providers roomiest first (ties by creation order); the sets in
    the order of the combinations of every provider splits name, listed
    roomiest first. Each split is a tuple of (provider, part)."""
    if not splits:
        return []
    fewest = min(len(split) for split in splits)
    listed = sorted({name for split in splits for name in split},
                    key=lambda name: (-roominess(model, name, rc, amount),
                                      model.order[name]))
    by_set = collections.defaultdict(list)
    for split in splits:
        if len(split) == fewest:
            ordered = [name for name in listed if name in split]
            by_set[tuple(ordered)].append(
                tuple((name, split[name]) for name in ordered))
    rank = {combination: index for index, combination in enumerate(
        itertools.combinations(listed, fewest))}
    return [max(by_set[names], key=lambda split: [p for _n, p in split])
            for names in sorted(by_set, key=rank.get)]


def _passes(model, group, name):
    """A suffixed group's traits, on the provider itself."""
    traits = set(model.providers[name]['traits'])
    return all(trait in traits for trait in group.required)


#: How a tree can serve a split class (TreeOffer.served).
WHOLE, SPLIT, REFUSED, ABSENT = 'whole', 'split', 'refused', 'absent'


class TreeOffer:
    """What one tree offers: its needs' options, and for each split
    class how the tree can serve it."""

    def __init__(self):
        self.needs = []
        #: {(suffix, rc): WHOLE when a provider can take the amount,
        #: SPLIT when none can but some valid split exists, REFUSED when
        #: providers can take parts but no parts make up the amount,
        #: ABSENT when no provider can take a part}, of the split classes.
        self.served = {}
        #: How many candidates the tree gives (those an earlier tree gave
        #: already, made of sharing providers alone, included).
        self.given = 0
        #: The keys (:func:`key`) of the candidates it gives that take a
        #: class in parts.
        self.splitting = set()


def offer(model, groups, root):
    """The TreeOffer of the tree ``root``: one need per class of the
    unsuffixed group, and per suffixed group one for its classes not
    split and one per split class; each need (suffix, options), an
    option a tuple of (provider, {rc: amount})."""
    tree = TreeOffer()
    serving = model.serving(root)
    for suffix, group in groups.items():
        whole = [rc for rc in group.resources if rc not in group.can_split]
        eligible = [name for name in serving
                    if not suffix or _passes(model, group, name)]
        if suffix and whole:
            tree.needs.append((suffix, [
                ((name, {rc: group.resources[rc] for rc in whole}),)
                for name in eligible
                if all(model.valid(name, rc, group.resources[rc])
                       for rc in whole)]))
        for rc, amount in group.resources.items():
            if suffix and rc not in group.can_split:
                continue
            takers = [name for name in eligible
                      if model.valid(name, rc, amount)]
            options = [((name, {rc: amount}),) for name in takers]
            if rc in group.can_split:
                parting = [name for name in eligible
                           if not model.sharing(name)
                           and model.parts(name, rc, amount)]
                splits = [] if takers else every_split(
                    model, parting, rc, amount)
                tree.served[suffix, rc] = (
                    WHOLE if takers else SPLIT if splits
                    else REFUSED if parting else ABSENT)
                if not takers:
                    options = [tuple((name, {rc: part}) for name, part
                                     in split)
                               for split in picked(model, splits, rc,
                                                   amount)]
            tree.needs.append((suffix, options))
    return tree


def candidates(model, pairs):
    """Every candidate of the request ``pairs``: [(root, allocations
    {provider: {rc: amount}}, mappings {suffix: sorted providers})], by
    tree in creation order; a candidate made of sharing providers alone
    only under the first tree giving it. Also {root: TreeOffer}."""
    groups = groups_of(pairs)
    values = dict(pairs)
    isolated = ({suffix for suffix in groups if suffix}
                if values.get('group_policy') == 'isolate' else set())
    subtrees = [set(value.split(',')) for key, value in pairs
                if key == 'same_subtree']
    found = []
    seen = set()
    offers = {}
    for root in model.trees():
        tree = offers[root] = offer(model, groups, root)
        if not tree.needs or not all(options for _s, options in tree.needs):
            continue
        for choice in itertools.product(*(options for _suffix, options
                                           in tree.needs)):
            allocations = collections.defaultdict(dict)
            mappings = collections.defaultdict(set)
            for (suffix, _options), option in zip(tree.needs, choice):
                for name, amounts in option:
                    mappings[suffix].add(name)
                    for rc, amount in amounts.items():
                        allocations[name][rc] = (
                            allocations[name].get(rc, 0) + amount)
            if not _fits(model, allocations):
                continue
            if any(mappings[a] & mappings[b] for a, b
                   in itertools.combinations(sorted(isolated), 2)):
                continue
            if not all(_in_one_subtree(model, set().union(
                    *(mappings[s] for s in suffixes)))
                    for suffixes in subtrees):
                continue
            tree.given += 1
            allocations = {name: dict(amounts)
                           for name, amounts in allocations.items()}
            mappings = {suffix: sorted(names)
                        for suffix, names in mappings.items()}
            if all(model.sharing(name) for name in allocations):
                shared = repr((sorted(allocations.items()),
                               sorted(mappings.items())))
                if shared in seen:
                    continue
                seen.add(shared)
            candidate = (root, allocations, mappings)
            if any(len(option) > 1 for option in choice):
                tree.splitting.add(key(candidate))
            found.append(candidate)
    return found, offers


def key(candidate):
    """A candidate (root, allocations, mappings) as a comparable string."""
    root, allocations, mappings = candidate
    return repr((root, sorted(allocations.items()), sorted(mappings.items())))


def _fits(model, allocations):
    """What one candidate takes of each provider fits its free capacity
    and max_unit."""
    for name, amounts in allocations.items():
        for rc, amount in amounts.items():
            _low, high, _step = model.units(name, rc)
            if amount > model.free(name, rc) or amount > high:
                return False
    return True


def _in_one_subtree(model, providers):
    return any(all(top in model.ancestors(name) for name in providers)
               for top in providers)


def valid_candidate(model, allocations):
    """Whether a candidate's allocation lines could be written: each
    within its provider's free capacity and units."""
    return all(model.valid(name, rc, amount)
               for name, amounts in allocations.items()
               for rc, amount in amounts.items())


def rng_for(seed):
    return random.Random(seed)
