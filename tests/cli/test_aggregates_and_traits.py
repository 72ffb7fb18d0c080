"""osc-placement's ``resource provider aggregate`` and ``resource provider trait`` commands."""

import uuid


def test_provider_aggregates(openstack):
    provider = openstack('resource', 'provider', 'create', 'cli-agg-host')
    agg_a, agg_b = sorted(str(uuid.uuid4()) for _ in range(2))

    listed = openstack('resource', 'provider', 'aggregate', 'set',
                       provider['uuid'], '--aggregate', agg_a,
                       '--aggregate', agg_b, '--generation', '0')
    assert sorted(row['uuid'] for row in listed) == [agg_a, agg_b]

    shown = openstack('resource', 'provider', 'aggregate', 'list',
                      provider['uuid'])
    assert sorted(row['uuid'] for row in shown) == [agg_a, agg_b]

    stale = openstack('resource', 'provider', 'aggregate', 'set',
                      provider['uuid'], '--aggregate', agg_a,
                      '--generation', '0', parse=False, check=False)
    assert stale.returncode == 1
    assert 'HTTP 409' in stale.stderr

    members = openstack('resource', 'provider', 'list', '--aggregate-uuid',
                        agg_b, version='1.3')
    assert [p['uuid'] for p in members] == [provider['uuid']]


def test_provider_traits(openstack):
    provider = openstack('resource', 'provider', 'create', 'cli-trait-host')

    traits = openstack('resource', 'provider', 'trait', 'set',
                       provider['uuid'], '--trait', 'HW_CPU_X86_AVX2',
                       '--trait', 'STORAGE_DISK_SSD')
    assert sorted(t['name'] for t in traits) == ['HW_CPU_X86_AVX2',
                                                'STORAGE_DISK_SSD']
    listed = openstack('resource', 'provider', 'trait', 'list',
                       provider['uuid'])
    assert sorted(t['name'] for t in listed) == ['HW_CPU_X86_AVX2',
                                                'STORAGE_DISK_SSD']

    with_trait = openstack('resource', 'provider', 'list', '--required',
                           'STORAGE_DISK_SSD', '--name', 'cli-trait-host',
                           version='1.18')
    assert [p['uuid'] for p in with_trait] == [provider['uuid']]

    openstack('resource', 'provider', 'trait', 'delete', provider['uuid'],
              parse=False)
    assert openstack('resource', 'provider', 'trait', 'list',
                     provider['uuid']) == []
