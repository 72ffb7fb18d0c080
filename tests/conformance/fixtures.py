"""The fixtures the reference's gabbi files name, built for placement_lite.

Each fixture gives its file the same world the reference's fixture of the
same name gives it: the same providers (names, parents, aggregates,
inventories, traits), the same allocations, the same environment variables
(which the YAML reads as ``$ENVIRON['...']``) and the same configuration
(policy, CORS). The data is created through placement_lite's own HTTP API,
in-process, as an administrator would create it, in the reference's order,
so that generations and listing orders come out as the reference's do.

The run is a comparison with the reference as it is, so extensions are off
(the reference's ``latest`` is 1.39) and the legacy policy defaults are
enforced unless a fixture says otherwise, as in the reference's fixtures.
"""

import json
import os
import tempfile
import uuid

from gabbi import fixture

from placement_lite import policies
from tests import harness

#: ``[api] enable_extensions`` of every file: off, the faithful comparison
#: (test_ratchet.py turns it on to check what extensions change).
EXTENSIONS = False


class FixtureSetupError(Exception):
    """A request building the fixture's data did not get the answer it needs."""

    def __init__(self, method, path, status, payload):
        super().__init__('fixture setup: %s %s answered %s: %s'
                         % (method, path, status, json.dumps(payload)))
        self.method = method
        self.path = path
        self.status = status


def _new_uuid():
    return str(uuid.uuid4())


class Builder:
    """Creates providers, classes, traits and allocations through the API."""

    # The newest microversion at which the requests below keep the shape
    # used here: allocations without a consumer type (1.38 requires one).
    VERSION = '1.37'

    def __init__(self, environment):
        self.environment = environment

    def call(self, method, path, body=None, version=VERSION,
             expect=(200, 201, 204)):
        status, _headers, payload = self.environment.request(
            method, path, body, version=version)
        if status not in expect:
            raise FixtureSetupError(method, path, status, payload)
        return payload

    def provider(self, name, *aggregates, parent=None, provider_uuid=None):
        """Create a provider; returns its uuid."""
        provider_uuid = provider_uuid or _new_uuid()
        body = {'name': name, 'uuid': provider_uuid}
        if parent:
            body['parent_provider_uuid'] = parent
        self.call('POST', '/resource_providers', body)
        if aggregates:
            self.set_aggregates(provider_uuid, *aggregates)
        return provider_uuid

    def set_aggregates(self, provider_uuid, *aggregates):
        # Before 1.19 the aggregates are a plain list and setting them does
        # not change the provider's generation, as for the reference's
        # fixtures, which set them directly.
        self.call('PUT', '/resource_providers/%s/aggregates' % provider_uuid,
                  list(aggregates), version='1.1', expect=(200,))

    def generation(self, provider_uuid):
        return self.call('GET', '/resource_providers/%s' % provider_uuid,
                         expect=(200,))['generation']

    def resource_class(self, name):
        if name.startswith('CUSTOM_'):
            self.call('PUT', '/resource_classes/%s' % name, expect=(201, 204))

    def inventory(self, provider_uuid, resource_class, total, **fields):
        """Add one inventory; like the reference's, max_unit defaults to total."""
        self.resource_class(resource_class)
        fields.setdefault('max_unit', total)
        fields.update(resource_class=resource_class, total=total,
                      resource_provider_generation=self.generation(
                          provider_uuid))
        self.call('POST', '/resource_providers/%s/inventories' % provider_uuid,
                  fields, expect=(201,))

    def traits(self, provider_uuid, *traits):
        """Set the provider's traits, creating the custom ones."""
        for trait in traits:
            if trait.startswith('CUSTOM_'):
                self.call('PUT', '/traits/%s' % trait, expect=(201, 204))
        self.call('PUT', '/resource_providers/%s/traits' % provider_uuid,
                  {'traits': list(traits),
                   'resource_provider_generation': self.generation(
                       provider_uuid)}, expect=(200,))

    def allocate(self, provider_uuid, resources, project_id, user_id,
                 consumer_uuid=None):
        """Give a new consumer ``resources`` on one provider; returns its uuid."""
        consumer_uuid = consumer_uuid or _new_uuid()
        self.call('PUT', '/allocations/%s' % consumer_uuid, {
            'allocations': {provider_uuid: {'resources': resources}},
            'project_id': project_id, 'user_id': user_id,
            'consumer_generation': None}, expect=(204,))
        return consumer_uuid


#: Environment variables every file may use, each a fresh uuid per file.
_UUID_VARIABLES = (
    'RP_UUID', 'RP_NAME', 'RP_UUID1', 'RP_NAME1', 'RP_UUID2', 'RP_NAME2',
    'PROJECT_ID', 'ADMIN_PROJECT_ID', 'SERVICE_PROJECT_ID', 'USER_ID',
    'PROJECT_ID_ALT', 'USER_ID_ALT', 'INSTANCE_UUID', 'MIGRATION_UUID',
    'CONSUMER_UUID', 'PARENT_PROVIDER_UUID', 'ALT_PARENT_PROVIDER_UUID',
)


class APIFixture(fixture.GabbiFixture):
    """An empty service configured as the reference's tests configure theirs.

    Subclasses add configuration in :meth:`configure` (before the service is
    built) and data in :meth:`populate` (through :attr:`build`).
    """

    #: ``[oslo_policy] enforce_new_defaults`` for the file.
    secure_rbac = False

    def start_fixture(self):
        self.session = harness.session()
        self.cleanups = []
        for name in _UUID_VARIABLES:
            os.environ[name] = _new_uuid()
        os.environ['CUSTOM_RES_CLASS'] = 'CUSTOM_IRON_NFV'
        os.environ['CUSTOM_RES_CLASS1'] = 'CUSTOM_IRON_NFV1'
        os.environ['CUSTOM_RES_CLASS2'] = 'CUSTOM_IRON_NFV2'
        overrides = self.session.conf_overrides
        overrides['api.enable_extensions'] = EXTENSIONS
        overrides['oslo_policy.enforce_new_defaults'] = self.secure_rbac
        self.configure(overrides)
        self.build = Builder(self.session.environment())
        self.populate()

    def stop_fixture(self):
        for cleanup in reversed(self.cleanups):
            cleanup()

    def configure(self, overrides):
        """Add configuration overrides for the file."""

    def populate(self):
        """Create the file's data."""


class SecureRBACPolicyFixture(APIFixture):
    """The new (scoped, reader/member/admin) policy defaults enforced."""

    secure_rbac = True


class LegacyRBACPolicyFixture(APIFixture):
    """The deprecated policy defaults, said explicitly."""

    secure_rbac = False


class OpenPolicyFixture(APIFixture):
    """Every rule but ``admin_api`` open to any authenticated user."""

    def configure(self, overrides):
        rules = {rule.name: '@' for rule in policies.list_rules()
                 if rule.name != 'admin_api'}
        handle, path = tempfile.mkstemp(prefix='open-policy-', suffix='.json')
        with os.fdopen(handle, 'w') as policy_file:
            json.dump(rules, policy_file)
        self.cleanups.append(lambda: os.unlink(path))
        overrides['oslo_policy.policy_file'] = path


class CORSFixture(APIFixture):
    """CORS on, for one allowed origin and the microversion header."""

    def configure(self, overrides):
        overrides['cors.allowed_origin'] = ['http://valid.example.com']
        overrides['cors.allow_headers'] = ['openstack-api-version']


class AllocationFixture(APIFixture):
    """One provider (VCPU 10, DISK_GB 2048) used by three consumers.

    Two consumers of USER_ID (DISK_GB 1000 as CONSUMER_0, VCPU 6 as
    CONSUMER_ID) and one of ALT_USER_ID (DISK_GB 20 and VCPU 1, as
    ALT_CONSUMER_ID), all in PROJECT_ID. ALT_RP_UUID/ALT_RP_NAME name a
    provider that does not exist.
    """

    def populate(self):
        env = os.environ
        env['ALT_USER_ID'] = _new_uuid()
        project, user, alt_user = (env['PROJECT_ID'], env['USER_ID'],
                                   env['ALT_USER_ID'])
        rp = self.build.provider(env['RP_NAME'], provider_uuid=env['RP_UUID'])
        self.build.inventory(rp, 'DISK_GB', 2048, step_size=10, min_unit=10,
                             max_unit=1000)
        self.build.inventory(rp, 'VCPU', 10, max_unit=10)
        env['CONSUMER_0'] = self.build.allocate(rp, {'DISK_GB': 1000},
                                                project, user)
        env['CONSUMER_ID'] = self.build.allocate(rp, {'VCPU': 6},
                                                 project, user)
        env['ALT_CONSUMER_ID'] = self.build.allocate(
            rp, {'DISK_GB': 20, 'VCPU': 1}, project, alt_user)
        env['ALT_RP_UUID'] = _new_uuid()
        env['ALT_RP_NAME'] = _new_uuid()


def _export(**uuids):
    for name, value in uuids.items():
        os.environ[name.upper()] = value


class SharedStorageFixture(APIFixture):
    """Two compute nodes sharing two storage providers through an aggregate.

    cn1 (VCPU 24 x16, MEMORY_MB 128G x1.5, SSE and SSE2 traits) and cn2
    (the same plus DISK_GB 2000, 100 reserved) are in AGG_UUID with ss and
    ss2 (DISK_GB 2000, 100 reserved, MISC_SHARES_VIA_AGGREGATE). Each
    compute node has two NUMA children, each with one PF child holding 8
    SRIOV_NET_VF.
    """

    def populate(self):
        build = self.build
        agg = _new_uuid()
        cn1 = build.provider('cn1', agg)
        cn2 = build.provider('cn2', agg)
        ss = build.provider('ss', agg)
        ss2 = build.provider('ss2', agg)
        numa1_1 = build.provider('numa1_1', parent=cn1)
        numa1_2 = build.provider('numa1_2', parent=cn1)
        numa2_1 = build.provider('numa2_1', parent=cn2)
        numa2_2 = build.provider('numa2_2', parent=cn2)
        pf1_1 = build.provider('pf1_1', parent=numa1_1)
        pf1_2 = build.provider('pf1_2', parent=numa1_2)
        pf2_1 = build.provider('pf2_1', parent=numa2_1)
        pf2_2 = build.provider('pf2_2', parent=numa2_2)
        _export(agg_uuid=agg, cn1_uuid=cn1, cn2_uuid=cn2, ss_uuid=ss,
                ss2_uuid=ss2, numa1_1_uuid=numa1_1, numa1_2_uuid=numa1_2,
                numa2_1_uuid=numa2_1, numa2_2_uuid=numa2_2,
                pf1_1_uuid=pf1_1, pf1_2_uuid=pf1_2, pf2_1_uuid=pf2_1,
                pf2_2_uuid=pf2_2)
        for cn in (cn1, cn2):
            build.inventory(cn, 'VCPU', 24, allocation_ratio=16.0)
            build.inventory(cn, 'MEMORY_MB', 128 * 1024, allocation_ratio=1.5)
        build.traits(cn1, 'HW_CPU_X86_SSE', 'HW_CPU_X86_SSE2')
        build.inventory(cn2, 'DISK_GB', 2000, reserved=100,
                        allocation_ratio=1.0)
        for shared in (ss, ss2):
            build.inventory(shared, 'DISK_GB', 2000, reserved=100,
                            allocation_ratio=1.0)
            build.traits(shared, 'MISC_SHARES_VIA_AGGREGATE')
        for pf in (pf1_1, pf1_2, pf2_1, pf2_2):
            build.inventory(pf, 'SRIOV_NET_VF', 8, allocation_ratio=1.0)


class NUMAAggregateFixture(APIFixture):
    """Compute nodes without inventory whose NUMA children hold the CPUs.

    cn1 is in aggA, cn2 in aggA and aggB; each has two NUMA children with
    VCPU 24 (x16). ss1 (in aggA) and ss2 (in aggC, like numa1_1) share
    DISK_GB 2000 (100 reserved).
    """

    def populate(self):
        build = self.build
        agg_a, agg_b, agg_c = _new_uuid(), _new_uuid(), _new_uuid()
        cn1 = build.provider('cn1', agg_a)
        cn2 = build.provider('cn2', agg_a, agg_b)
        ss1 = build.provider('ss1', agg_a)
        ss2 = build.provider('ss2', agg_c)
        numa1_1 = build.provider('numa1_1', agg_c, parent=cn1)
        numa1_2 = build.provider('numa1_2', parent=cn1)
        numa2_1 = build.provider('numa2_1', parent=cn2)
        numa2_2 = build.provider('numa2_2', parent=cn2)
        _export(agga_uuid=agg_a, aggb_uuid=agg_b, aggc_uuid=agg_c,
                cn1_uuid=cn1, cn2_uuid=cn2, ss1_uuid=ss1, ss2_uuid=ss2,
                numa1_1_uuid=numa1_1, numa1_2_uuid=numa1_2,
                numa2_1_uuid=numa2_1, numa2_2_uuid=numa2_2)
        for numa in (numa1_1, numa1_2, numa2_1, numa2_2):
            build.inventory(numa, 'VCPU', 24, allocation_ratio=16.0)
        for shared in (ss1, ss2):
            build.inventory(shared, 'DISK_GB', 2000, reserved=100,
                            allocation_ratio=1.0)
            build.traits(shared, 'MISC_SHARES_VIA_AGGREGATE')


class NUMANetworkFixture(APIFixture):
    """Two differently shaped compute hosts, with devices and networks.

    cn1 (COMPUTE_VOLUME_MULTI_ATTACH, no inventory, in aggA with the
    sharing ss1, DISK_GB 2000) has two HW_NUMA_ROOT children: numa0 (VCPU 4
    of which 2 used, MEMORY_MB 2048 min 512 step 256, children fpga0 FPGA 1
    and pgpu0 VGPU 8) and numa1 (also CUSTOM_FOO; VCPU 4, MEMORY_MB 2048 min
    256 max 1024, children fpga1_0 and fpga1_1 FPGA 1); an sriov_agent
    (CUSTOM_VNIC_TYPE_DIRECT) over esn1/esn2 (CUSTOM_PHYSNET1/2,
    NET_BW_EGR_KILOBIT_PER_SEC 10000/20000); an ovs_agent
    (CUSTOM_VNIC_TYPE_NORMAL) over br_int (CUSTOM_PHYSNET0, 1000).

    cn2 (in aggA; VCPU 8 of which 3 used, MEMORY_MB 2048 min 1024 step 128,
    DISK_GB 1000, CUSTOM_FOO) has three CUSTOM_HW_NIC_ROOT children: nic1
    over pf1_1/pf1_2 (CUSTOM_VF 4 each), nic2 over pf2_1..pf2_4 (CUSTOM_VF
    2 each), nic3 over pf3_1 (CUSTOM_VF 8); PFs alternate CUSTOM_PHYSNET1
    and CUSTOM_PHYSNET2 (pf3_1 on PHYSNET1). The used resources belong to
    two consumers of user numafx-user in project numafx-project.
    """

    def populate(self):
        self.populate_hosts()

    def populate_hosts(self, cn1=None, cn2=None):
        """Fill cn1 and cn2, creating them (as roots) when not given."""
        build = self.build
        env = os.environ
        project, user = 'numafx-project', 'numafx-user'
        agg_a = _new_uuid()
        env['AGGA_UUID'] = agg_a
        ss1 = build.provider('ss1', agg_a)
        build.traits(ss1, 'MISC_SHARES_VIA_AGGREGATE')
        build.inventory(ss1, 'DISK_GB', 2000)
        env['SS1_UUID'] = ss1

        cn1 = cn1 or build.provider('cn1')
        build.set_aggregates(cn1, agg_a)
        build.traits(cn1, 'COMPUTE_VOLUME_MULTI_ATTACH')
        env['CN1_UUID'] = cn1
        numas = []
        for index in (0, 1):
            numa = build.provider('numa%d' % index, parent=cn1)
            build.traits(numa, 'HW_NUMA_ROOT',
                         *(['CUSTOM_FOO'] if index == 1 else []))
            build.inventory(numa, 'VCPU', 4)
            numas.append(numa)
            env['NUMA%d_UUID' % index] = numa
        build.inventory(numas[0], 'MEMORY_MB', 2048, min_unit=512,
                        step_size=256)
        build.inventory(numas[1], 'MEMORY_MB', 2048, min_unit=256,
                        max_unit=1024)
        build.allocate(numas[0], {'VCPU': 2}, project, user)

        fpga = build.provider('fpga0', parent=numas[0])
        build.inventory(fpga, 'FPGA', 1)
        env['FPGA0_UUID'] = fpga
        pgpu = build.provider('pgpu0', parent=numas[0])
        build.inventory(pgpu, 'VGPU', 8)
        env['PGPU0_UUID'] = pgpu
        for index in (0, 1):
            fpga = build.provider('fpga1_%d' % index, parent=numas[1])
            build.inventory(fpga, 'FPGA', 1)
            env['FPGA1_%d_UUID' % index] = fpga

        agent = build.provider('sriov_agent', parent=cn1)
        build.traits(agent, 'CUSTOM_VNIC_TYPE_DIRECT')
        env['SRIOV_AGENT_UUID'] = agent
        for index in (1, 2):
            device = build.provider('esn%d' % index, parent=agent)
            build.traits(device, 'CUSTOM_PHYSNET%d' % index)
            build.inventory(device, 'NET_BW_EGR_KILOBIT_PER_SEC',
                            10000 * index)
            env['ESN%d_UUID' % index] = device
        agent = build.provider('ovs_agent', parent=cn1)
        build.traits(agent, 'CUSTOM_VNIC_TYPE_NORMAL')
        env['OVS_AGENT_UUID'] = agent
        device = build.provider('br_int', parent=agent)
        build.traits(device, 'CUSTOM_PHYSNET0')
        build.inventory(device, 'NET_BW_EGR_KILOBIT_PER_SEC', 1000)
        env['BR_INT_UUID'] = device

        cn2 = cn2 or build.provider('cn2')
        build.set_aggregates(cn2, agg_a)
        build.inventory(cn2, 'VCPU', 8)
        build.allocate(cn2, {'VCPU': 3}, project, user)
        build.inventory(cn2, 'MEMORY_MB', 2048, min_unit=1024, step_size=128)
        build.inventory(cn2, 'DISK_GB', 1000)
        build.traits(cn2, 'CUSTOM_FOO')
        env['CN2_UUID'] = cn2
        nics = []
        for index in (1, 2, 3):
            nic = build.provider('nic%d' % index, parent=cn2)
            build.traits(nic, 'CUSTOM_HW_NIC_ROOT')
            nics.append(nic)
            env['NIC%d_UUID' % index] = nic
        pfs = ([(nics[0], '1_%d' % n, n, 4) for n in (1, 2)]
               + [(nics[1], '2_%d' % (n + 1), n % 2 + 1, 2) for n in range(4)]
               + [(nics[2], '3_1', 1, 8)])
        for nic, suffix, physnet, vfs in pfs:
            pf = build.provider('pf' + suffix, parent=nic)
            build.traits(pf, 'CUSTOM_PHYSNET%d' % physnet)
            build.inventory(pf, 'CUSTOM_VF', vfs)
            env['PF%s_UUID' % suffix] = pf


class DeepNUMANetworkFixture(NUMANetworkFixture):
    """NUMANetworkFixture with cn1 and cn2 moved down a tree.

    gp1 is the root; its children p1 and p2 are the parents of cn1 and cn2.
    """

    def populate(self):
        build = self.build
        grandparent = build.provider('gp1')
        parent1 = build.provider('p1', parent=grandparent)
        parent2 = build.provider('p2', parent=grandparent)
        self.populate_hosts(build.provider('cn1', parent=parent1),
                            build.provider('cn2', parent=parent2))


class NonSharedStorageFixture(APIFixture):
    """Three compute nodes with local VCPU 24, MEMORY_MB 128G, DISK_GB 2000.

    AGGA_UUID, AGGB_UUID and AGGC_UUID name aggregates nothing is in yet.
    """

    def populate(self):
        _export(agga_uuid=_new_uuid(), aggb_uuid=_new_uuid(),
                aggc_uuid=_new_uuid())
        nodes = [self.build.provider(name) for name in ('cn1', 'cn2', 'cn3')]
        _export(cn1_uuid=nodes[0], cn2_uuid=nodes[1], cn3_uuid=nodes[2])
        for node in nodes:
            self.build.inventory(node, 'VCPU', 24)
            self.build.inventory(node, 'MEMORY_MB', 128 * 1024)
            self.build.inventory(node, 'DISK_GB', 2000)


class GranularFixture(APIFixture):
    """Three compute nodes and three sharing providers in aggregates A-C.

    cn_left (aggA): VCPU 8, MEMORY_MB 4096, DISK_GB 500, VGPU 8,
    SRIOV_NET_VF 8, CUSTOM_NET_MBPS 4000; AVX, AVX2, DXVA, DCB_PFC,
    CUSTOM_FOO. cn_middle (aggA, aggB): VCPU 8, MEMORY_MB 4096,
    SRIOV_NET_VF 8, CUSTOM_NET_MBPS 4000; AVX, AVX2, SSE, NIC_ACCEL_TLS.
    cn_right (aggB, aggC): VCPU 8, MEMORY_MB 4096, DISK_GB 500, VGPU 8
    (max_unit 2); MMX, DXVA, CUSTOM_DISK_SSD. shr_disk_1 (aggA): DISK_GB
    1000, CUSTOM_DISK_SSD. shr_disk_2 (aggA, aggB): DISK_GB 1000. shr_net
    (aggC): SRIOV_NET_VF 16, CUSTOM_NET_MBPS 40000. The three shr_*
    providers have MISC_SHARES_VIA_AGGREGATE.
    """

    def populate(self):
        build = self.build
        env = os.environ
        build.resource_class('CUSTOM_NET_MBPS')
        agg_a, agg_b, agg_c = _new_uuid(), _new_uuid(), _new_uuid()
        _export(agga=agg_a, aggb=agg_b, aggc=agg_c)

        cn_left = env['CN_LEFT'] = build.provider('cn_left', agg_a)
        for resource_class, total in (('VCPU', 8), ('MEMORY_MB', 4096),
                                      ('DISK_GB', 500), ('VGPU', 8),
                                      ('SRIOV_NET_VF', 8),
                                      ('CUSTOM_NET_MBPS', 4000)):
            build.inventory(cn_left, resource_class, total)
        build.traits(cn_left, 'HW_CPU_X86_AVX', 'HW_CPU_X86_AVX2',
                     'HW_GPU_API_DXVA', 'HW_NIC_DCB_PFC', 'CUSTOM_FOO')

        cn_middle = env['CN_MIDDLE'] = build.provider('cn_middle', agg_a,
                                                      agg_b)
        for resource_class, total in (('VCPU', 8), ('MEMORY_MB', 4096),
                                      ('SRIOV_NET_VF', 8),
                                      ('CUSTOM_NET_MBPS', 4000)):
            build.inventory(cn_middle, resource_class, total)
        build.traits(cn_middle, 'HW_CPU_X86_AVX', 'HW_CPU_X86_AVX2',
                     'HW_CPU_X86_SSE', 'HW_NIC_ACCEL_TLS')

        cn_right = env['CN_RIGHT'] = build.provider('cn_right', agg_b, agg_c)
        build.inventory(cn_right, 'VCPU', 8)
        build.inventory(cn_right, 'MEMORY_MB', 4096)
        build.inventory(cn_right, 'DISK_GB', 500)
        build.inventory(cn_right, 'VGPU', 8, max_unit=2)
        build.traits(cn_right, 'HW_CPU_X86_MMX', 'HW_GPU_API_DXVA',
                     'CUSTOM_DISK_SSD')

        shr_disk_1 = env['SHR_DISK_1'] = build.provider('shr_disk_1', agg_a)
        build.inventory(shr_disk_1, 'DISK_GB', 1000)
        build.traits(shr_disk_1, 'MISC_SHARES_VIA_AGGREGATE',
                     'CUSTOM_DISK_SSD')
        shr_disk_2 = env['SHR_DISK_2'] = build.provider('shr_disk_2', agg_a,
                                                        agg_b)
        build.inventory(shr_disk_2, 'DISK_GB', 1000)
        build.traits(shr_disk_2, 'MISC_SHARES_VIA_AGGREGATE')
        shr_net = env['SHR_NET'] = build.provider('shr_net', agg_c)
        build.inventory(shr_net, 'SRIOV_NET_VF', 16)
        build.inventory(shr_net, 'CUSTOM_NET_MBPS', 40000)
        build.traits(shr_net, 'MISC_SHARES_VIA_AGGREGATE')


class NeutronQoSMultiSegmentFixture(APIFixture):
    """Four compute trees as Neutron builds them for QoS on multisegment
    networks.

    Each computeN (VCPU 8, MEMORY_MB 4096, DISK_GB 500) has an
    "Open vSwitch agent" child (NET_PACKET_RATE_KILOPACKET_PER_SEC 1000,
    CUSTOM_VNIC_TYPE_NORMAL) over bridge(s), and a "NIC Switch agent" child
    (the DIRECT, DIRECT_PHYSICAL and MACVTAP vnic types) over PF(s). Bridges
    and PFs hold egress and ingress bandwidth and a physnet trait: compute0
    is on CUSTOM_PHYSNET_OTHER, compute1 on MSN_S1, compute2 on MSN_S2 (5000
    per bridge, 10000 per PF). compute3 has one bridge and one PF on each of
    MSN_S1 and MSN_S2, with only 1000 each. Providers are exported as
    ``computeN``, ``computeN:ovs_agent``, ``computeN:br_ex`` (and
    ``compute3:br_ex2``), ``computeN:sriov_agent``, ``computeN:pf0`` (and
    ``compute3:pf1``).
    """

    SRIOV_VNIC_TYPES = ('CUSTOM_VNIC_TYPE_DIRECT',
                        'CUSTOM_VNIC_TYPE_DIRECT_PHYSICAL',
                        'CUSTOM_VNIC_TYPE_MACVTAP')

    def populate(self):
        single = [('compute0', 'CUSTOM_PHYSNET_OTHER'),
                  ('compute1', 'CUSTOM_PHYSNET_MSN_S1'),
                  ('compute2', 'CUSTOM_PHYSNET_MSN_S2')]
        for name, physnet in single:
            self.compute(name, bridges=[('br_ex', 'br-ex', physnet, 5000)],
                         pfs=[('pf0', 'enp129s0f0', physnet, 10000)])
        self.compute('compute3',
                     bridges=[('br_ex', 'br-ex', 'CUSTOM_PHYSNET_MSN_S1',
                               1000),
                              ('br_ex2', 'br-ex2', 'CUSTOM_PHYSNET_MSN_S2',
                               1000)],
                     pfs=[('pf0', 'enp129s0f0', 'CUSTOM_PHYSNET_MSN_S1',
                           1000),
                          ('pf1', 'enp129s0f1', 'CUSTOM_PHYSNET_MSN_S2',
                           1000)])
        # The reference's fixture exports compute2's NIC Switch agent under
        # compute3's name too; no file reads it, kept for the same world.
        os.environ['compute3:sriov_agent'] = (
            os.environ['compute2:sriov_agent'])

    def compute(self, name, bridges, pfs):
        build = self.build
        env = os.environ
        compute = env[name] = build.provider(name)
        build.inventory(compute, 'VCPU', 8)
        build.inventory(compute, 'MEMORY_MB', 4096)
        build.inventory(compute, 'DISK_GB', 500)

        ovs_name = '%s:Open vSwitch agent' % name
        ovs = env[name + ':ovs_agent'] = build.provider(ovs_name,
                                                        parent=compute)
        build.inventory(ovs, 'NET_PACKET_RATE_KILOPACKET_PER_SEC', 1000)
        build.traits(ovs, 'CUSTOM_VNIC_TYPE_NORMAL')
        for key, device, physnet, bandwidth in bridges:
            bridge = env['%s:%s' % (name, key)] = build.provider(
                '%s:%s' % (ovs_name, device), parent=ovs)
            self.bandwidth(bridge, bandwidth)
            build.traits(bridge, 'CUSTOM_VNIC_TYPE_NORMAL', physnet)

        sriov_name = '%s:NIC Switch agent' % name
        sriov = env[name + ':sriov_agent'] = build.provider(sriov_name,
                                                            parent=compute)
        build.traits(sriov, *self.SRIOV_VNIC_TYPES)
        for key, device, physnet, bandwidth in pfs:
            pf = env['%s:%s' % (name, key)] = build.provider(
                '%s:%s' % (sriov_name, device), parent=sriov)
            self.bandwidth(pf, bandwidth)
            build.traits(pf, *self.SRIOV_VNIC_TYPES, physnet)

    def bandwidth(self, provider, kilobits):
        self.build.inventory(provider, 'NET_BW_EGR_KILOBIT_PER_SEC', kilobits)
        self.build.inventory(provider, 'NET_BW_IGR_KILOBIT_PER_SEC', kilobits)
