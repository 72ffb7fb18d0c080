"""osc-placement's inventory, resource class, trait and usage commands."""


def test_inventories(openstack):
    provider = openstack('resource', 'provider', 'create', 'cli-inv-host')
    uuid = provider['uuid']

    rows = openstack('resource', 'provider', 'inventory', 'set', uuid,
                     '--resource', 'VCPU=8', '--resource',
                     'VCPU:allocation_ratio=4.0', '--resource',
                     'MEMORY_MB=2048')
    assert {r['resource_class']: (r['total'], r['allocation_ratio'])
            for r in rows} == {'VCPU': (8, 4.0), 'MEMORY_MB': (2048, 1.0)}

    one = openstack('resource', 'provider', 'inventory', 'show', uuid,
                    'MEMORY_MB')
    assert one['total'] == 2048
    assert one['reserved'] == 0

    updated = openstack('resource', 'provider', 'inventory', 'class', 'set',
                        uuid, 'MEMORY_MB', '--total', '4096', '--reserved',
                        '512')
    assert (updated['total'], updated['reserved']) == (4096, 512)

    openstack('resource', 'provider', 'inventory', 'set', uuid, '--amend',
              '--resource', 'DISK_GB=100')
    listed = openstack('resource', 'provider', 'inventory', 'list', uuid)
    assert sorted(r['resource_class'] for r in listed) == [
        'DISK_GB', 'MEMORY_MB', 'VCPU']

    openstack('resource', 'provider', 'inventory', 'delete', uuid,
              '--resource-class', 'DISK_GB', parse=False)
    listed = openstack('resource', 'provider', 'inventory', 'list', uuid)
    assert sorted(r['resource_class'] for r in listed) == ['MEMORY_MB',
                                                          'VCPU']

    usages = openstack('resource', 'provider', 'usage', 'show', uuid)
    assert sorted((u['resource_class'], u['usage']) for u in usages) == [
        ('MEMORY_MB', 0), ('VCPU', 0)]


def test_resource_classes(openstack):
    openstack('resource', 'class', 'create', 'CUSTOM_CLI_GADGET', parse=False)
    shown = openstack('resource', 'class', 'show', 'CUSTOM_CLI_GADGET')
    assert shown == {'name': 'CUSTOM_CLI_GADGET'}
    names = [c['name'] for c in openstack('resource', 'class', 'list')]
    assert 'VCPU' in names and 'CUSTOM_CLI_GADGET' in names

    refused = openstack('resource', 'class', 'delete', 'VCPU', parse=False,
                        check=False)
    assert refused.returncode == 1
    assert 'HTTP 400' in refused.stderr

    openstack('resource', 'class', 'delete', 'CUSTOM_CLI_GADGET', parse=False)
    gone = openstack('resource', 'class', 'show', 'CUSTOM_CLI_GADGET',
                     parse=False, check=False)
    assert gone.returncode == 1
    assert 'HTTP 404' in gone.stderr


def test_traits(openstack):
    openstack('trait', 'create', 'CUSTOM_CLI_FANCY', parse=False)
    assert openstack('trait', 'show', 'CUSTOM_CLI_FANCY') == {
        'name': 'CUSTOM_CLI_FANCY'}
    custom = openstack('trait', 'list', '--name', 'startswith:CUSTOM_CLI_')
    assert custom == [{'name': 'CUSTOM_CLI_FANCY'}]
    openstack('trait', 'delete', 'CUSTOM_CLI_FANCY', parse=False)
    assert openstack('trait', 'list', '--name',
                     'startswith:CUSTOM_CLI_') == []
