"""osc-placement's allocation, usage and allocation candidate commands."""

import uuid


def _host(openstack, name):
    provider = openstack('resource', 'provider', 'create', name)
    openstack('resource', 'provider', 'inventory', 'set', provider['uuid'],
              '--resource', 'VCPU=4', '--resource', 'MEMORY_MB=1024')
    return provider['uuid']


def test_allocations_and_usages(openstack):
    host = _host(openstack, 'cli-alloc-host')
    consumer = str(uuid.uuid4())
    project, user = str(uuid.uuid4()), str(uuid.uuid4())

    rows = openstack('resource', 'provider', 'allocation', 'set', consumer,
                     '--allocation', 'rp=%s,VCPU=2,MEMORY_MB=256' % host,
                     '--project-id', project, '--user-id', user,
                     version='1.28')
    # generation 1 came with the inventory, 2 with this claim
    assert rows == [{'resource_provider': host, 'generation': 2,
                     'resources': {'VCPU': 2, 'MEMORY_MB': 256},
                     'project_id': project, 'user_id': user}]

    shown = openstack('resource', 'provider', 'allocation', 'show', consumer,
                      version='1.12')
    assert [r['resources'] for r in shown] == [{'VCPU': 2, 'MEMORY_MB': 256}]

    usages = openstack('resource', 'usage', 'show', project, version='1.9')
    assert sorted((u['resource_class'], u['usage']) for u in usages) == [
        ('MEMORY_MB', 256), ('VCPU', 2)]

    over = openstack('resource', 'provider', 'allocation', 'set',
                     str(uuid.uuid4()), '--allocation',
                     'rp=%s,VCPU=3' % host, '--project-id', project,
                     '--user-id', user, version='1.28', parse=False,
                     check=False)
    assert over.returncode == 1
    assert 'HTTP 409' in over.stderr

    openstack('resource', 'provider', 'allocation', 'delete', consumer,
              parse=False)
    assert openstack('resource', 'provider', 'allocation', 'show',
                     consumer, version='1.12') == []


def test_allocation_candidate_list(openstack):
    host = _host(openstack, 'cli-candidate-host')
    candidates = openstack('allocation', 'candidate', 'list', '--resource',
                           'VCPU=1', '--resource', 'MEMORY_MB=128',
                           '--required', 'HW_CPU_X86_AVX512F',
                           version='1.17')
    assert candidates == []

    openstack('resource', 'provider', 'trait', 'set', host, '--trait',
              'HW_CPU_X86_AVX512F')
    candidates = openstack('allocation', 'candidate', 'list', '--resource',
                           'VCPU=1', '--resource', 'MEMORY_MB=128',
                           '--required', 'HW_CPU_X86_AVX512F',
                           version='1.17')
    assert [(c['resource provider'], c['allocation']) for c in candidates] \
        == [(host, 'VCPU=1,MEMORY_MB=128')]
