"""The named ``GET /allocation_candidates`` queries the benchmark times.

Each asks what a scheduler asks of the cloud built by
:func:`tests.bench.cloud.build`. All are sent at microversion 1.39, which has
every feature they use (``root_required`` came in 1.35, ``same_subtree`` and
suffixed group names in 1.36).
"""

import dataclasses
import urllib.parse

VERSION = '1.39'
FLAVOR = 'VCPU:2,MEMORY_MB:2048,DISK_GB:20'


@dataclasses.dataclass(frozen=True)
class Query:
    name: str
    description: str
    params: tuple
    #: On a wide tree the reference enumerates every combination of
    #: providers; it gets a per-request timeout and runs last.
    wide: bool = False
    version: str = VERSION

    @property
    def path(self):
        return '/allocation_candidates?' + urllib.parse.urlencode(self.params)


def named_queries(cloud):
    """The queries, in the order they run (wide trees last)."""
    marks = cloud.landmarks
    return [
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
              (('resources', FLAVOR),
               ('resources1', 'SRIOV_NET_VF:1'),
               ('required1', 'CUSTOM_PHYSNET_NET0'),
               ('resources2', 'SRIOV_NET_VF:1'),
               ('group_policy', 'isolate'), ('limit', '1000'))),
        Query('root_required', 'root traits required and forbidden',
              (('resources', FLAVOR),
               ('root_required',
                'COMPUTE_VOLUME_MULTI_ATTACH,!CUSTOM_MAINTENANCE'))),
        Query('in_tree', 'one named host',
              (('resources', FLAVOR), ('in_tree', marks['in_tree']))),
        Query('wide_pci_6', '6 one-unit groups on 8 one-unit PCI children',
              _one_unit_groups('CUSTOM_PCI_WIDE', 6, 'none'), wide=True),
        Query('wide_pci_8', '8 one-unit groups on 8 one-unit PCI children',
              _one_unit_groups('CUSTOM_PCI_WIDE', 8, 'isolate'), wide=True),
        Query('wide_vf_6', '6 VF groups on 2 hosts x 8 PFs x 8 VFs',
              _one_unit_groups('SRIOV_NET_VF', 6, 'none',
                               trait='CUSTOM_PHYSNET_WIDE'), wide=True),
    ]


def _one_unit_groups(resource_class, groups, policy, trait=None):
    params = []
    for group in range(1, groups + 1):
        params.append(('resources%d' % group, '%s:1' % resource_class))
        if trait:
            params.append(('required%d' % group, trait))
    params += [('group_policy', policy), ('limit', '1000')]
    return tuple(params)


def count(payload):
    """Number of candidates in a response body."""
    return len(payload['allocation_requests'])
