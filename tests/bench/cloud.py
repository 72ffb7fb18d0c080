"""The benchmark cloud: its topology, and loading it through the REST API.

:func:`build` describes a cloud of ``hosts`` compute hosts as plain data (no
HTTP); :class:`Loader` creates it in any service through the API, so that
placement_lite and the reference hold exactly the same providers.

Each compute host is a tree::

    cnNNNNN                 DISK_GB (unless its storage is shared), CPU traits
    +- cnNNNNN-numa0        VCPU, MEMORY_MB
    |  +- cnNNNNN-pf0       SRIOV_NET_VF, CUSTOM_PHYSNET_NET0
    |  +- cnNNNNN-pf1       SRIOV_NET_VF, CUSTOM_PHYSNET_NET1
    |  +- cnNNNNN-fpga      FPGA, CUSTOM_FPGA_ARRIA10     (every 5th host)
    +- cnNNNNN-numa1        VCPU, MEMORY_MB
       +- cnNNNNN-pf2       SRIOV_NET_VF, CUSTOM_PHYSNET_NET0
       +- cnNNNNN-pf3       SRIOV_NET_VF, CUSTOM_PHYSNET_NET1
       +- cnNNNNN-gpu       VGPU, CUSTOM_GPU_A100         (every 7th host)

Hosts are in a rack aggregate and an availability-zone aggregate; the first
host of every ten (0, 10, 20, ...; at most 100 hosts) is also alone in an
aggregate of its own, as nova's tenant isolation keeps a project's hosts.
Hosts are grouped in storage groups; every third group has no local disk
and uses a sharing storage provider (MISC_SHARES_VIA_AGGREGATE) in the
group's aggregate. 60% of the hosts run instances, as in a region in service: hosts
0-4 of every ten run 1 to 4, every tenth host is full.

Two more layouts of the same hosts (``build``'s ``layout``), for
can_split (1.44), where VCPU and MEMORY_MB of every tenth host (8, 18,
28, ...) are left fragmented: ``numa`` as above, an instance on each of
those hosts' nodes leaving 2 VCPU and 4096 MB free on each, so that nova's
flavor fits such a host only split over its nodes (nova's case against
NUMA in Placement); ``flat``, the same hosts and instances with VCPU and
MEMORY_MB on the root, as nova models a host whose NUMA nodes Placement
does not know (the NUMA nodes stay, holding the PFs and devices).

Two wide trees, on which candidate generation that enumerates every
combination explodes, use resource classes or traits nothing else has:
``wide-pci`` (8 children with one CUSTOM_PCI_WIDE each) and ``wide-vf0``,
``wide-vf1`` (8 PFs with 8 SRIOV_NET_VF each, trait CUSTOM_PHYSNET_WIDE).
"""

import concurrent.futures
import dataclasses
import hashlib
import time
import uuid

#: Microversion used to load: 1.20+ returns the created provider, 1.19+
#: takes a generation with aggregates, 1.28+ consumer generations.
LOAD_VERSION = '1.39'
NAMESPACE = uuid.UUID('6f0c1b55-3a4e-4f3b-9a51-2f6d1f8c1e0a')

STORAGE_GROUP_SIZE = 20
RACK_SIZE = 40
ZONES = 3
PFS_PER_NUMA = 2
VFS_PER_PF = 16
WIDE_CHILDREN = 8
WIDE_VF_HOSTS = 2
#: build's layouts: VCPU and MEMORY_MB on two NUMA nodes (as every
#: benchmark but can_split's uses), the same with fragmented hosts, and
#: those on the root.
DEFAULT = 'default'
NUMA = 'numa'
FLAT = 'flat'
LAYOUTS = (DEFAULT, NUMA, FLAT)
#: With the NUMA and FLAT layouts, the hosts ``index % 10`` of which is
#: this are fragmented.
FRAGMENTED = 8
#: Aggregates of one host each (see _compute_host), at most.
TENANT_AGGREGATES = 100
#: A tenant aggregate is made for every this many hosts.
TENANT_HOST_SPACING = 10

CUSTOM_RESOURCE_CLASSES = ('CUSTOM_PCI_WIDE',)
CUSTOM_TRAITS = ('CUSTOM_PHYSNET_NET0', 'CUSTOM_PHYSNET_NET1',
                 'CUSTOM_PHYSNET_WIDE', 'CUSTOM_FPGA_ARRIA10',
                 'CUSTOM_GPU_A100', 'CUSTOM_MAINTENANCE')


def make_uuid(name):
    return str(uuid.uuid5(NAMESPACE, name))


def inventory(total, reserved=0, allocation_ratio=1.0, max_unit=None):
    return {'total': total, 'reserved': reserved,
            'allocation_ratio': allocation_ratio,
            'max_unit': max_unit or total, 'min_unit': 1, 'step_size': 1}


@dataclasses.dataclass
class Provider:
    name: str
    parent: 'Provider | None' = None
    inventories: dict = dataclasses.field(default_factory=dict)
    traits: list = dataclasses.field(default_factory=list)
    aggregates: list = dataclasses.field(default_factory=list)

    @property
    def uuid(self):
        return make_uuid(self.name)

    @property
    def depth(self):
        return 0 if self.parent is None else self.parent.depth + 1


@dataclasses.dataclass
class Consumer:
    name: str
    allocations: dict  # provider uuid -> {resource class: amount}
    project_id: str = make_uuid('project')
    user_id: str = make_uuid('user')

    @property
    def uuid(self):
        return make_uuid(self.name)


@dataclasses.dataclass
class Cloud:
    hosts: int
    providers: list
    consumers: list
    #: Names the queries refer to (aggregate and provider uuids).
    landmarks: dict

    def fingerprint(self):
        """A digest of everything the loader creates, to name caches by."""
        digest = hashlib.sha1(LOAD_VERSION.encode())
        for provider in self.providers:
            digest.update(repr((provider.name, provider.parent and
                                provider.parent.name, provider.inventories,
                                provider.traits,
                                provider.aggregates)).encode())
        for consumer in self.consumers:
            digest.update(repr(dataclasses.astuple(consumer)).encode())
        return digest.hexdigest()[:12]

    def levels(self):
        """Providers grouped by depth: each level's parents are in the one before."""
        by_depth = {}
        for provider in self.providers:
            by_depth.setdefault(provider.depth, []).append(provider)
        return [by_depth[depth] for depth in sorted(by_depth)]


def aggregate(name):
    return make_uuid('aggregate-' + name)


def tenant_aggregates():
    """The uuids of the TENANT_AGGREGATES aggregates of one host each
    (fewer exist in a cloud of fewer than 1,000 hosts)."""
    return [aggregate('tenant%d' % number)
            for number in range(TENANT_AGGREGATES)]


def build(hosts, storage_group_size=STORAGE_GROUP_SIZE, layout=DEFAULT):
    """The whole cloud for ``hosts`` compute hosts, deterministically, in
    one of LAYOUTS."""
    providers = []
    consumers = []
    sharing = {}

    def add(provider):
        providers.append(provider)
        return provider

    busy_index = min(3, hosts - 1)
    for index in range(hosts):
        group = index // storage_group_size
        shared_storage = group % 3 == 1
        if shared_storage and group not in sharing:
            sharing[group] = add(Provider(
                'shared-storage%03d' % group,
                inventories={'DISK_GB': inventory(100000, reserved=1000)},
                traits=['MISC_SHARES_VIA_AGGREGATE'],
                aggregates=[aggregate('storage%d' % group)]))
        root = add(_compute_host(index, shared_storage, group))
        cores = {
            'VCPU': inventory(32, allocation_ratio=4.0, max_unit=128),
            'MEMORY_MB': inventory(196608, reserved=4096)}
        if layout == FLAT:
            root.inventories.update(
                VCPU=inventory(64, allocation_ratio=4.0, max_unit=256),
                MEMORY_MB=inventory(2 * 196608, reserved=2 * 4096))
        numas = [add(Provider(
            '%s-numa%d' % (root.name, numa), root,
            inventories={} if layout == FLAT else dict(cores)))
            for numa in range(2)]
        pfs = [add(Provider(
            '%s-pf%d' % (root.name, pf), numas[pf // PFS_PER_NUMA],
            inventories={'SRIOV_NET_VF': inventory(VFS_PER_PF)},
            traits=['HW_NIC_SRIOV', 'CUSTOM_PHYSNET_NET%d' % (pf % 2)]))
            for pf in range(2 * PFS_PER_NUMA)]
        if index % 5 == 0:
            add(Provider('%s-fpga' % root.name, numas[0],
                         inventories={'FPGA': inventory(2)},
                         traits=['CUSTOM_FPGA_ARRIA10']))
        if index % 7 == 3:
            add(Provider('%s-gpu' % root.name, numas[1],
                         inventories={'VGPU': inventory(8)},
                         traits=['CUSTOM_GPU_A100']))
        disk = sharing[group] if shared_storage else root
        if index == busy_index:
            busy_disk = disk
        instances = _instances(index, root, numas, pfs, disk)
        if layout != DEFAULT and index % 10 == FRAGMENTED:
            instances.append(Consumer('%s-fragments' % root.name, {
                numa.uuid: {'VCPU': 126, 'MEMORY_MB': 188416}
                for numa in numas}))
        if layout == FLAT:
            instances = [_on_root(instance, root, numas)
                         for instance in instances]
        consumers.extend(instances)

    wide_pci = add(Provider('wide-pci'))
    for child in range(WIDE_CHILDREN):
        add(Provider('wide-pci-dev%d' % child, wide_pci,
                     inventories={'CUSTOM_PCI_WIDE': inventory(1)}))
    for host in range(WIDE_VF_HOSTS):
        wide_vf = add(Provider('wide-vf%d' % host))
        for pf in range(WIDE_CHILDREN):
            add(Provider('wide-vf%d-pf%d' % (host, pf), wide_vf,
                         inventories={'SRIOV_NET_VF': inventory(8)},
                         traits=['CUSTOM_PHYSNET_WIDE']))

    # A host running instances.
    busy = _host_name(busy_index)
    landmarks = {
        'zone0': aggregate('zone0'), 'zone1': aggregate('zone1'),
        'rack0': aggregate('rack0'),
        'tenants': tenant_aggregates(),
        'in_tree': make_uuid(_host_name(min(7, hosts - 1))),
        'in_tree_name': _host_name(min(7, hosts - 1)),
        'busy_host': make_uuid(busy),
        'busy_numa': make_uuid(busy + '-numa0'),
        'busy_pf': make_uuid(busy + '-pf0'),
        'busy_disk': busy_disk.uuid,
        'instance': make_uuid(busy + '-vm0'),
        'project': make_uuid('project'), 'user': make_uuid('user'),
    }
    return Cloud(hosts, providers, consumers, landmarks)


def _host_name(index):
    return 'cn%05d' % index


def _compute_host(index, shared_storage, group):
    traits = ['COMPUTE_NET_ATTACH_INTERFACE']
    if index % 2 == 0:
        traits.append('HW_CPU_X86_AVX2')
    if index % 3 != 0:
        traits.append('COMPUTE_VOLUME_MULTI_ATTACH')
    if index % 50 == 7:
        traits.append('CUSTOM_MAINTENANCE')
    aggregates = [aggregate('rack%d' % (index // RACK_SIZE)),
                  aggregate('zone%d' % (index % ZONES))]
    inventories = {}
    tenant, offset = divmod(index, TENANT_HOST_SPACING)
    if offset == 0 and tenant < TENANT_AGGREGATES:
        aggregates.append(aggregate('tenant%d' % tenant))
    if shared_storage:
        aggregates.append(aggregate('storage%d' % group))
    else:
        inventories['DISK_GB'] = inventory(1000, reserved=50)
    return Provider(_host_name(index), inventories=inventories, traits=traits,
                    aggregates=aggregates)


def _instances(index, root, numas, pfs, disk):
    """Instances already running on host ``index``: 50% busy, 10% full."""
    if index % 10 == 9:
        return [Consumer('%s-big' % root.name, {
            numas[0].uuid: {'VCPU': 128, 'MEMORY_MB': 65536},
            numas[1].uuid: {'VCPU': 128, 'MEMORY_MB': 65536},
            disk.uuid: {'DISK_GB': 100}})]
    if index % 10 >= 5:
        return []
    instances = []
    for number in range(1 + index % 4):
        numa = number % 2
        allocations = {numas[numa].uuid: {'VCPU': 4, 'MEMORY_MB': 8192},
                       disk.uuid: {'DISK_GB': 40}}
        if number % 2 == 0:
            allocations[pfs[numa * PFS_PER_NUMA].uuid] = {'SRIOV_NET_VF': 1}
        instances.append(Consumer('%s-vm%d' % (root.name, number),
                                  allocations))
    return instances


def _on_root(instance, root, numas):
    """``instance`` with what it takes of ``numas`` taken of ``root``."""
    allocations = {}
    moved = {numa.uuid for numa in numas}
    for uuid_, resources in instance.allocations.items():
        held = allocations.setdefault(
            root.uuid if uuid_ in moved else uuid_, {})
        for name, amount in resources.items():
            held[name] = held.get(name, 0) + amount
    return dataclasses.replace(instance, allocations=allocations)


class LoadError(Exception):
    pass


class Loader:
    """Creates a :class:`Cloud` through the API of one service.

    ``client`` has ``request(method, path, body=None, version=...)`` returning
    ``(status, headers, json)``: :class:`tests.bench.services.HttpClient` or,
    in-process, :class:`tests.harness.Environment`. Providers of one tree
    level are created in parallel (``threads``), each with one request per
    kind of data: create, inventories, traits, aggregates.
    """

    RETRIES = 5

    def __init__(self, client, threads=4, allocation_batch=50):
        self.client = client
        self.threads = threads
        #: Consumers per POST /allocations; with 1, each instance is
        #: claimed alone, as nova claims (tests/bench/builder.py writes
        #: the generations that leaves).
        self.allocation_batch = allocation_batch

    def load(self, cloud, progress=None):
        """Create everything in ``cloud``; returns the seconds it took.

        ``progress``, when given, is called with a message after each step.
        """
        progress = progress or (lambda message: None)
        started = time.monotonic()
        for name in CUSTOM_RESOURCE_CLASSES:
            self._call('PUT', '/resource_classes/%s' % name, None, (201, 204))
        for name in CUSTOM_TRAITS:
            self._call('PUT', '/traits/%s' % name, None, (201, 204))
        for depth, level in enumerate(cloud.levels()):
            self._parallel(self._create_provider, level)
            progress('%d providers at depth %d created after %.0f s'
                     % (len(level), depth, time.monotonic() - started))
        batches = [cloud.consumers[start:start + self.allocation_batch]
                   for start in range(0, len(cloud.consumers),
                                      self.allocation_batch)]
        self._parallel(self._allocate, batches)
        return time.monotonic() - started

    def _parallel(self, function, items):
        if self.threads <= 1:
            for item in items:
                function(item)
            return
        with concurrent.futures.ThreadPoolExecutor(self.threads) as pool:
            for _result in pool.map(function, items):
                pass

    def _call(self, method, path, body, expected):
        status, _headers, payload = self.client.request(
            method, path, body, version=LOAD_VERSION)
        if status not in expected:
            raise LoadError('%s %s -> %s: %s' % (method, path, status,
                                                 payload))
        return payload

    def _create_provider(self, provider):
        body = {'name': provider.name, 'uuid': provider.uuid}
        if provider.parent is not None:
            body['parent_provider_uuid'] = provider.parent.uuid
        generation = self._call('POST', '/resource_providers', body,
                                (200,))['generation']
        base = '/resource_providers/%s' % provider.uuid
        if provider.inventories:
            generation = self._call('PUT', base + '/inventories', {
                'resource_provider_generation': generation,
                'inventories': provider.inventories,
            }, (200,))['resource_provider_generation']
        if provider.traits:
            generation = self._call('PUT', base + '/traits', {
                'resource_provider_generation': generation,
                'traits': provider.traits,
            }, (200,))['resource_provider_generation']
        if provider.aggregates:
            self._call('PUT', base + '/aggregates', {
                'resource_provider_generation': generation,
                'aggregates': provider.aggregates,
            }, (200,))

    def _allocate(self, consumers):
        """POST one batch; a 409 (a concurrent writer bumped a shared
        provider's generation) is retried a bounded number of times."""
        body = {consumer.uuid: {
            'allocations': {rp: {'resources': resources}
                            for rp, resources in consumer.allocations.items()},
            'project_id': consumer.project_id,
            'user_id': consumer.user_id,
            'consumer_generation': None,
            'consumer_type': 'INSTANCE',
        } for consumer in consumers}
        for attempt in range(self.RETRIES):
            status, _headers, payload = self.client.request(
                'POST', '/allocations', body, version=LOAD_VERSION)
            if status == 204:
                return
            if status != 409 or attempt == self.RETRIES - 1:
                raise LoadError('POST /allocations -> %s: %s'
                                % (status, payload))
            time.sleep(0.05 * (attempt + 1))
