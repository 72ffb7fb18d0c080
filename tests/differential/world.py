"""Seeded small worlds, and the API requests that build them.

A world is a few provider trees (a root with nested children, sometimes
grandchildren), sharing providers in aggregates with some roots, custom
resource classes and traits, and consumers holding allocations that fit.
Everything is derived from the seed, uuids included, so both services see
the same names and the same requests.

:func:`build` turns a world into requests; ``drop`` leaves out some trees,
sharing providers and consumers, which is how the shrinker makes a world
smaller while keeping the requests of a run unchanged.
"""

import dataclasses
import json
import random
import uuid

STANDARD_TRAITS = ('HW_CPU_X86_AVX2', 'HW_CPU_X86_SSE',
                   'COMPUTE_VOLUME_MULTI_ATTACH', 'HW_NIC_OFFLOAD_GENEVE',
                   'STORAGE_DISK_SSD', 'COMPUTE_STATUS_DISABLED')
SHARES = 'MISC_SHARES_VIA_AGGREGATE'
CONSUMER_TYPES = ('INSTANCE', 'MIGRATION', 'CUSTOM_BACKUP')
#: The version the world is built at: every feature it uses exists there.
BUILD_VERSION = '1.39'


def seeded_uuid(rng):
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


@dataclasses.dataclass
class Provider:
    uuid: str
    name: str
    parent: str = None
    inventories: dict = dataclasses.field(default_factory=dict)
    traits: list = dataclasses.field(default_factory=list)
    aggregates: list = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class Consumer:
    uuid: str
    project: str
    user: str
    consumer_type: str
    allocations: dict  # provider uuid -> {class: amount}


@dataclasses.dataclass
class World:
    seed: int
    custom_classes: list
    custom_traits: list
    aggregates: list
    trees: list  # of lists of providers, root first, parents before children
    sharing: list  # of providers
    consumers: list
    projects: list
    users: list

    def providers(self, drop=frozenset()):
        """Every provider of the world not dropped, parents first."""
        found = []
        for index, tree in enumerate(self.trees):
            if ('tree', index) not in drop:
                found.extend(tree)
        for index, provider in enumerate(self.sharing):
            if ('sharing', index) not in drop:
                found.append(provider)
        return found

    def parts(self):
        """What the shrinker may drop: ('tree'|'sharing'|'consumer', i)."""
        return ([('consumer', i) for i in range(len(self.consumers))]
                + [('tree', i) for i in range(len(self.trees))]
                + [('sharing', i) for i in range(len(self.sharing))])


def _inventory(rng, resource_class, totals):
    total = rng.choice(totals)
    record = {'total': total}
    if rng.random() < 0.3:
        record['reserved'] = rng.randint(0, total // 4)
    if rng.random() < 0.3:
        record['allocation_ratio'] = rng.choice([1.0, 2.0, 16.0, 1.5])
    if rng.random() < 0.2:
        record['max_unit'] = max(1, total // 2)
    if rng.random() < 0.15 and total >= 4:
        record['step_size'] = 2
        record['min_unit'] = 2
    return record


def _traits(rng, custom, count):
    pool = list(STANDARD_TRAITS) + custom
    return sorted(rng.sample(pool, min(len(pool), rng.randint(0, count))))


def generate(seed):
    """The world of ``seed``."""
    rng = random.Random(seed)
    custom_classes = ['CUSTOM_%s_%d' % (rng.choice(['RAID', 'FPGA', 'GOLD']),
                                        rng.randint(1, 99))
                      for _ in range(rng.randint(0, 2))]
    custom_classes = sorted(set(custom_classes))
    custom_traits = sorted({'CUSTOM_T%d' % rng.randint(1, 50)
                            for _ in range(rng.randint(0, 3))})
    aggregates = [seeded_uuid(rng) for _ in range(rng.randint(1, 3))]
    names = iter('p%d-%d' % (seed, n) for n in range(1000))

    trees = []
    for _ in range(rng.randint(1, 4)):
        root = Provider(seeded_uuid(rng), next(names))
        root.inventories['MEMORY_MB'] = _inventory(rng, 'MEMORY_MB',
                                                   [2048, 4096, 8192])
        if rng.random() < 0.5:
            root.inventories['VCPU'] = _inventory(rng, 'VCPU', [2, 4, 8])
        if rng.random() < 0.5:
            root.inventories['DISK_GB'] = _inventory(rng, 'DISK_GB',
                                                     [100, 500, 1000])
        if custom_classes and rng.random() < 0.3:
            root.inventories[rng.choice(custom_classes)] = _inventory(
                rng, 'CUSTOM', [1, 2, 4])
        root.traits = _traits(rng, custom_traits, 3)
        root.aggregates = sorted(rng.sample(
            aggregates, rng.randint(0, min(2, len(aggregates)))))
        tree = [root]
        for _ in range(rng.randint(0, 3)):
            parent = rng.choice(tree)
            child = Provider(seeded_uuid(rng), next(names), parent.uuid)
            kind = rng.choice(['numa', 'nic', 'fpga', 'empty'])
            if kind == 'numa':
                child.inventories['VCPU'] = _inventory(rng, 'VCPU', [2, 4, 8])
                child.inventories['MEMORY_MB'] = _inventory(
                    rng, 'MEMORY_MB', [1024, 2048])
            elif kind == 'nic':
                child.inventories['SRIOV_NET_VF'] = _inventory(
                    rng, 'SRIOV_NET_VF', [2, 4, 8])
                child.inventories['NET_BW_EGR_KILOBIT_PER_SEC'] = _inventory(
                    rng, 'BW', [1000, 10000])
            elif kind == 'fpga' and custom_classes:
                child.inventories[rng.choice(custom_classes)] = _inventory(
                    rng, 'CUSTOM', [1, 2, 4])
            child.traits = _traits(rng, custom_traits, 2)
            if rng.random() < 0.2:
                child.aggregates = sorted(rng.sample(aggregates, 1))
            tree.append(child)
        trees.append(tree)

    sharing = []
    for _ in range(rng.randint(0, 2)):
        provider = Provider(seeded_uuid(rng), next(names))
        provider.inventories['DISK_GB'] = _inventory(rng, 'DISK_GB',
                                                     [1000, 2000])
        if custom_classes and rng.random() < 0.4:
            provider.inventories[rng.choice(custom_classes)] = _inventory(
                rng, 'CUSTOM', [2, 4])
        provider.traits = sorted({SHARES} | set(
            _traits(rng, custom_traits, 1)))
        provider.aggregates = sorted(rng.sample(
            aggregates, rng.randint(1, min(2, len(aggregates)))))
        sharing.append(provider)

    projects = [seeded_uuid(rng) for _ in range(2)]
    users = [seeded_uuid(rng) for _ in range(2)]
    world = World(seed, custom_classes, custom_traits, aggregates, trees,
                  sharing, [], projects, users)
    world.consumers = _consumers(rng, world)
    return world


def _capacity(record):
    return int((record['total'] - record.get('reserved', 0))
               * record.get('allocation_ratio', 1.0))


def _consumers(rng, world):
    """Consumers whose allocations fit what is left, amounts valid."""
    used = {}
    consumers = []
    providers = world.providers()
    for _ in range(rng.randint(0, 4)):
        allocations = {}
        for provider in rng.sample(providers, min(len(providers),
                                                  rng.randint(1, 3))):
            for name, record in provider.inventories.items():
                if rng.random() < 0.5:
                    continue
                step = record.get('step_size', 1)
                amount = max(record.get('min_unit', 1), step)
                left = _capacity(record) - used.get((provider.uuid, name), 0)
                if amount > min(left, record.get('max_unit', amount)):
                    continue
                used[(provider.uuid, name)] = used.get(
                    (provider.uuid, name), 0) + amount
                allocations.setdefault(provider.uuid, {})[name] = amount
        if allocations:
            consumers.append(Consumer(
                seeded_uuid(rng), rng.choice(world.projects),
                rng.choice(world.users), rng.choice(CONSUMER_TYPES),
                allocations))
    return consumers


def _json(body):
    return json.dumps(body).encode()


def build(world, drop=frozenset()):
    """``(method, path, body bytes)`` of the requests that build ``world``
    without the parts in ``drop``, at :data:`BUILD_VERSION` as admin.

    A consumer is dropped with any tree or sharing provider it uses.
    """
    requests = []
    for name in world.custom_classes:
        requests.append(('PUT', '/resource_classes/' + name, b''))
    for name in world.custom_traits:
        requests.append(('PUT', '/traits/' + name, b''))
    providers = world.providers(drop)
    for provider in providers:
        body = {'name': provider.name, 'uuid': provider.uuid}
        if provider.parent:
            body['parent_provider_uuid'] = provider.parent
        requests.append(('POST', '/resource_providers', _json(body)))
    for provider in providers:
        generation = 0
        base = '/resource_providers/%s' % provider.uuid
        if provider.inventories:
            requests.append(('PUT', base + '/inventories', _json({
                'resource_provider_generation': generation,
                'inventories': provider.inventories})))
            generation += 1
        if provider.traits:
            requests.append(('PUT', base + '/traits', _json({
                'resource_provider_generation': generation,
                'traits': provider.traits})))
            generation += 1
        if provider.aggregates:
            requests.append(('PUT', base + '/aggregates', _json({
                'resource_provider_generation': generation,
                'aggregates': provider.aggregates})))
    present = {provider.uuid for provider in providers}
    for index, consumer in enumerate(world.consumers):
        if ('consumer', index) in drop or not set(
                consumer.allocations) <= present:
            continue
        requests.append(('PUT', '/allocations/' + consumer.uuid, _json({
            'allocations': {rp: {'resources': resources} for rp, resources
                            in consumer.allocations.items()},
            'project_id': consumer.project, 'user_id': consumer.user,
            'consumer_generation': None,
            'consumer_type': consumer.consumer_type})))
    return requests
