"""The named queries the benchmark times.

Each asks what a scheduler (``GET /allocation_candidates``) or an operator
or agent (``GET /resource_providers``, one query per filter; the other
reads of nova's report client and of the ``openstack`` CLI) asks of the
cloud built by :func:`tests.bench.cloud.build`. All are sent at microversion
1.39, which has every feature they use (``root_required`` came in 1.35,
``same_subtree`` and suffixed group names in 1.36), but for the explain
variants of a few candidates queries (``<name>_explain``: the same query
with ``explain=true``, at placement_lite's 1.41), which time what explain
adds; only placement_lite answers those, in turns with the query itself.
"""

import dataclasses
import urllib.parse

VERSION = '1.39'
EXPLAIN_VERSION = '1.41'
FLAVOR = 'VCPU:2,MEMORY_MB:2048,DISK_GB:20'
#: The queries timed again with explain=true, each right after itself.
EXPLAINED = ('simple', 'limit50', 'required_traits', 'same_subtree',
             'isolate', 'nova_flavor', 'none_fits')
#: The flavor and two VFs from different PFs, one of them on physnet0.
_ISOLATED_VFS = (('resources', FLAVOR),
                 ('resources1', 'SRIOV_NET_VF:1'),
                 ('required1', 'CUSTOM_PHYSNET_NET0'),
                 ('resources2', 'SRIOV_NET_VF:1'),
                 ('group_policy', 'isolate'))


@dataclasses.dataclass(frozen=True)
class Query:
    name: str
    description: str
    params: tuple
    #: On a wide tree the reference enumerates every combination of
    #: providers; it gets a per-request timeout and runs last.
    wide: bool = False
    version: str = VERSION
    route: str = '/allocation_candidates'
    #: For an explain variant, the name of the query it explains.
    explains: str = None

    @property
    def path(self):
        if not self.params:
            return self.route
        return self.route + '?' + urllib.parse.urlencode(self.params)

    @property
    def candidates(self):
        return self.route == '/allocation_candidates'

    @property
    def bounded(self):
        """Whether the answer has a limit (candidates queries)."""
        return any(name == 'limit' for name, _value in self.params)


def _listing(name, description, params=()):
    return Query(name, description, params, route='/resource_providers')


def _read(name, description, route, params=(), version=VERSION):
    return Query(name, description, params, route=route, version=version)


def _with_explain_variants(queries):
    """``queries``, each of EXPLAINED followed by its explain variant."""
    found = []
    for query in queries:
        found.append(query)
        if query.name in EXPLAINED:
            found.append(Query(
                query.name + '_explain', 'the same with explain=true',
                query.params + (('explain', 'true'),),
                version=EXPLAIN_VERSION, explains=query.name))
    return found


def named_queries(cloud):
    """The queries, in the order they run (wide trees last)."""
    marks = cloud.landmarks
    return _with_explain_variants([
        _read('root', 'GET /: the version document, no database: what '
              'every request costs before its own work', '/'),
        Query('simple', 'one flavor, every host, no limit',
              (('resources', FLAVOR),)),
        Query('limit50', 'one flavor, limit=50',
              (('resources', FLAVOR), ('limit', '50'))),
        Query('required_traits', 'required and forbidden traits',
              (('resources', FLAVOR),
               ('required', 'HW_CPU_X86_AVX2,!CUSTOM_MAINTENANCE'))),
        Query('member_of', 'hosts in either of two zone aggregates',
              (('resources', FLAVOR),
               ('member_of', 'in:%s,%s' % (marks['zone0'], marks['zone1'])))),
        Query('member_of_100', 'hosts in any of 100 aggregates of one host '
              "each (nova's tenant isolation)",
              (('resources', FLAVOR),
               ('member_of', 'in:' + ','.join(marks['tenants'])))),
        Query('sharing', 'DISK_GB only a sharing provider can give',
              (('resources', 'VCPU:1,MEMORY_MB:1024,DISK_GB:2000'),)),
        Query('same_subtree',
              'NUMA cores + VF + FPGA under the same NUMA node, limit=1000',
              (('resources', 'DISK_GB:20'),
               ('resources_COMPUTE', 'VCPU:2,MEMORY_MB:4096'),
               ('resources_NET', 'SRIOV_NET_VF:1'),
               ('required_NET', 'CUSTOM_PHYSNET_NET0'),
               ('resources_ACCEL', 'FPGA:1'),
               ('required_ACCEL', 'CUSTOM_FPGA_ARRIA10'),
               ('same_subtree', '_COMPUTE,_NET,_ACCEL'),
               ('group_policy', 'none'), ('limit', '1000'))),
        Query('isolate', 'two VFs from different PFs, limit=1000',
              _ISOLATED_VFS + (('limit', '1000'),)),
        Query('isolate_all', 'two VFs from different PFs, no limit',
              _ISOLATED_VFS),
        Query('root_required', 'root traits required and forbidden',
              (('resources', FLAVOR),
               ('root_required',
                'COMPUTE_VOLUME_MULTI_ATTACH,!CUSTOM_MAINTENANCE'))),
        Query('in_tree', 'one named host',
              (('resources', FLAVOR), ('in_tree', marks['in_tree']))),
        Query('nova_flavor', "nova's request: a larger flavor, hosts not "
              'disabled, limit=1000',
              (('resources', 'VCPU:4,MEMORY_MB:8192,DISK_GB:80'),
               ('root_required', '!COMPUTE_STATUS_DISABLED'),
               ('limit', '1000'))),
        Query('nova_flavor_50', "nova's request, limit=50",
              (('resources', 'VCPU:4,MEMORY_MB:8192,DISK_GB:80'),
               ('root_required', '!COMPUTE_STATUS_DISABLED'),
               ('limit', '50'))),
        Query('none_fits', 'more memory than any provider has',
              (('resources', 'MEMORY_MB:1048576'),)),
        _listing('rp_all', 'GET /resource_providers: every provider'),
        _listing('rp_name', 'providers by name',
                 (('name', marks['in_tree_name']),)),
        _listing('rp_uuid', 'providers by uuid',
                 (('uuid', marks['in_tree']),)),
        _listing('rp_in_tree', 'the providers of one tree',
                 (('in_tree', marks['in_tree']),)),
        _listing('rp_member_of', 'providers in a zone aggregate',
                 (('member_of', marks['zone0']),)),
        _listing('rp_required', 'providers with a trait and without another',
                 (('required', 'CUSTOM_PHYSNET_NET0,!HW_NIC_ACCEL_SSL'),)),
        _listing('rp_resources', 'providers with room for one class',
                 (('resources', 'VCPU:1'),)),
        _listing('rp_resources_3', 'providers with room for three classes '
                 '(none: no provider has all three)',
                 (('resources', 'VCPU:1,MEMORY_MB:512,DISK_GB:10'),)),
        _listing('rp_resources_required', 'room for four VFs, with a trait '
                 'and without another',
                 (('resources', 'SRIOV_NET_VF:4'),
                  ('required', 'CUSTOM_PHYSNET_NET0,!HW_NIC_ACCEL_SSL'))),
        *_client_reads(marks),
        Query('wide_pci_6', '6 one-unit groups on 8 one-unit PCI children',
              _one_unit_groups('CUSTOM_PCI_WIDE', 6, 'none'), wide=True),
        Query('wide_pci_8', '8 one-unit groups on 8 one-unit PCI children',
              _one_unit_groups('CUSTOM_PCI_WIDE', 8, 'isolate'), wide=True),
        Query('wide_vf_6', '6 VF groups on 2 hosts x 8 PFs x 8 VFs',
              _one_unit_groups('SRIOV_NET_VF', 6, 'none',
                               trait='CUSTOM_PHYSNET_WIDE'), wide=True),
    ])


def _client_reads(marks):
    """What nova's report client and the ``openstack`` CLI read besides
    listings, of a host running instances."""
    host = '/resource_providers/%s' % marks['busy_host']
    numa = '/resource_providers/%s' % marks['busy_numa']
    project = (('project_id', marks['project']),)
    return [
        _read('rp_show', 'one provider', host),
        _read('rp_inventories', "a NUMA node's inventories",
              numa + '/inventories'),
        _read('rp_inventory', "a NUMA node's VCPU inventory",
              numa + '/inventories/VCPU'),
        _read('rp_traits', "a host's traits", host + '/traits'),
        _read('rp_aggregates', "a host's aggregates", host + '/aggregates'),
        _read('rp_usages', "a NUMA node's usages", numa + '/usages'),
        _read('rp_allocations', "the allocations against a NUMA node",
              numa + '/allocations'),
        _read('consumer_allocations', "an instance's allocations",
              '/allocations/%s' % marks['instance']),
        _read('project_usages', "a project's usages (at 1.37: from 1.38 "
              'the reference answers 500 on PostgreSQL)', '/usages',
              project, version='1.37'),
        _read('user_usages', "a project's and user's usages (at 1.37)",
              '/usages', project + (('user_id', marks['user']),),
              version='1.37'),
        _read('traits_all', 'every trait', '/traits'),
        _read('traits_custom', 'custom traits', '/traits',
              (('name', 'startswith:CUSTOM_'),)),
        _read('resource_classes', 'every resource class',
              '/resource_classes'),
    ]


def _one_unit_groups(resource_class, groups, policy, trait=None):
    params = []
    for group in range(1, groups + 1):
        params.append(('resources%d' % group, '%s:1' % resource_class))
        if trait:
            params.append(('required%d' % group, trait))
    params += [('group_policy', policy), ('limit', '1000')]
    return tuple(params)


#: The member of an answer whose entries count as its results (the first
#: present), by route.
COUNTED = ('allocation_requests', 'resource_providers', 'inventories',
           'traits', 'aggregates', 'allocations', 'usages',
           'resource_classes', 'versions')


def count(payload):
    """Number of candidates (providers, inventories, traits, ...) in a
    response body; None for one resource (a provider, an inventory)."""
    for member in COUNTED:
        if member in payload:
            return len(payload[member])
    return None


def hosts(payload):
    """How many distinct trees the candidates of a response body take
    resources from, sharing providers left out (a sharing provider is a
    tree of its own, not a host); None for a listing."""
    if 'allocation_requests' not in payload:
        return None
    summaries = payload['provider_summaries']
    roots = set()
    for request in payload['allocation_requests']:
        for uuid in request['allocations']:
            summary = summaries[uuid]
            if 'MISC_SHARES_VIA_AGGREGATE' not in summary['traits']:
                roots.add(summary['root_provider_uuid'])
    return len(roots)


RANKED_VERSION = '1.42'
NOVA_FLAVOR = (('resources', 'VCPU:4,MEMORY_MB:8192,DISK_GB:80'),
               ('root_required', '!COMPUTE_STATUS_DISABLED'))
#: "An FPGA, else a VF": the two alternatives of the accelerator group.
_FPGA = (('resources_ACCEL', 'FPGA:1'),
         ('required_ACCEL', 'CUSTOM_FPGA_ARRIA10'))
_VF = (('resources_NET', 'SRIOV_NET_VF:1'),
       ('required_NET', 'CUSTOM_PHYSNET_NET0'))
_SPREAD = (('rank_by', 'spread:MEMORY_MB'), ('group_policy', 'none'),
           ('limit', '1000'))


def ranked_queries(cloud):
    """The ranked queries (placement_lite's 1.42, api-ref/extensions.md),
    timed by ``python -m tests.bench.ranked`` against the unranked ones
    (only placement_lite answers them): nova's flavor request ranked by
    spread on MEMORY_MB, with explain, and a request with two prioritized
    alternatives next to each alternative asked alone; the variants whose
    key is not what a tree keeps free alone (preferred traits, a class a
    sharing provider holds) and those kept to one tree (in_tree), each
    beside its unranked twin."""
    ranked = Query('nova_flavor_ranked', "nova's request, limit=1000, "
                   'ranked by spread on MEMORY_MB',
                   NOVA_FLAVOR + (('rank_by', 'spread:MEMORY_MB'),
                                  ('limit', '1000')),
                   version=RANKED_VERSION)
    in_tree = (('in_tree', cloud.landmarks['in_tree']), ('limit', '1000'))
    return [
        ranked,
        Query('nova_flavor_packed', "nova's request, limit=1000, ranked by "
              'pack on MEMORY_MB',
              NOVA_FLAVOR + (('rank_by', 'pack:MEMORY_MB'),
                             ('limit', '1000')), version=RANKED_VERSION),
        Query('nova_flavor_ranked_explain', 'the same with explain=true',
              ranked.params + (('explain', 'true'),),
              version=RANKED_VERSION, explains=ranked.name),
        Query('nova_flavor_preferred', 'the ranked request preferring '
              'HW_CPU_X86_AVX2 (half the hosts have it)',
              ranked.params + (('preferred', 'HW_CPU_X86_AVX2'),),
              version=RANKED_VERSION),
        Query('nova_flavor_shared_key', "nova's request, limit=1000, ranked "
              'by spread on MEMORY_MB then DISK_GB, which sharing providers '
              'hold', NOVA_FLAVOR + (('rank_by', 'spread:MEMORY_MB,DISK_GB'),
                                     ('limit', '1000')),
              version=RANKED_VERSION),
        Query('nova_flavor_in_tree', "nova's request in one named host, "
              'limit=1000, unranked', NOVA_FLAVOR + in_tree,
              version=RANKED_VERSION),
        Query('nova_flavor_in_tree_ranked', 'the same ranked by spread on '
              'MEMORY_MB', NOVA_FLAVOR + in_tree
              + (('rank_by', 'spread:MEMORY_MB'),), version=RANKED_VERSION),
        Query('alternatives_ranked', "nova's flavor and an FPGA, else a "
              'VF: two alternatives, spread on MEMORY_MB, limit=1000',
              NOVA_FLAVOR + _FPGA + _VF + _SPREAD
              + (('alternatives', '_ACCEL,_NET'),), version=RANKED_VERSION),
        Query('alternative_fpga', 'the first alternative alone, unranked '
              '(what the two alternatives return where FPGA trees are more '
              'than the limit)', NOVA_FLAVOR + _FPGA
              + (('group_policy', 'none'), ('limit', '1000')),
              version=RANKED_VERSION),
        Query('alternative_fpga_ranked', 'the first alternative alone',
              NOVA_FLAVOR + _FPGA + _SPREAD, version=RANKED_VERSION),
        Query('alternative_vf_ranked', 'the second alternative alone',
              NOVA_FLAVOR + _VF + _SPREAD, version=RANKED_VERSION),
    ]


SPLIT_VERSION = '1.44'
#: nova's flavor, each of its classes held by NUMA nodes allowed to split.
NOVA_FLAVOR_SPLIT = NOVA_FLAVOR + (('can_split', 'VCPU,MEMORY_MB'),)


def split_queries():
    """The can_split queries (placement_lite's 1.44), timed by ``python
    -m tests.bench.split`` on the cloud of NUMA hosts against nova's
    flavor on the flat cloud (only placement_lite answers them): nova's
    flavor letting VCPU and MEMORY_MB split, with limit=1000, ranked, and
    without a limit."""
    bounded = Query('nova_flavor_split', "nova's request, limit=1000, "
                    'VCPU and MEMORY_MB split over NUMA nodes where none '
                    'holds the flavor', NOVA_FLAVOR_SPLIT
                    + (('limit', '1000'),), version=SPLIT_VERSION)
    return [
        bounded,
        Query('nova_flavor_split_ranked', 'the same ranked by spread on '
              'MEMORY_MB', bounded.params + (('rank_by', 'spread:MEMORY_MB'),),
              version=SPLIT_VERSION),
        Query('nova_flavor_split_all', 'the same without a limit',
              NOVA_FLAVOR_SPLIT, version=SPLIT_VERSION),
    ]
