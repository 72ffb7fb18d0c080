"""osc-placement's ``resource provider`` commands against placement_lite."""


def test_provider_lifecycle(openstack):
    created = openstack('resource', 'provider', 'create', 'cli-root')
    assert created['name'] == 'cli-root'
    assert created['generation'] == 0
    assert created['root_provider_uuid'] == created['uuid']
    assert created['parent_provider_uuid'] is None

    child = openstack('resource', 'provider', 'create', 'cli-child',
                      '--parent-provider', created['uuid'])
    assert child['root_provider_uuid'] == created['uuid']
    assert child['parent_provider_uuid'] == created['uuid']

    listed = openstack('resource', 'provider', 'list', '--in-tree',
                       created['uuid'])
    assert sorted(p['name'] for p in listed) == ['cli-child', 'cli-root']

    shown = openstack('resource', 'provider', 'show', child['uuid'])
    assert shown['name'] == 'cli-child'

    renamed = openstack('resource', 'provider', 'set', child['uuid'],
                        '--name', 'cli-child-renamed',
                        '--parent-provider', created['uuid'])
    assert renamed['name'] == 'cli-child-renamed'
    assert renamed['generation'] == 0  # a rename is not a generation change

    refused = openstack('resource', 'provider', 'delete', created['uuid'],
                        parse=False, check=False)
    assert refused.returncode == 1
    assert 'Unable to delete parent resource provider' in refused.stderr

    openstack('resource', 'provider', 'delete', child['uuid'], parse=False)
    openstack('resource', 'provider', 'delete', created['uuid'], parse=False)
    remaining = openstack('resource', 'provider', 'list', '--name', 'cli-root')
    assert remaining == []
