"""placement_lite's own plugin: ``openstack device profile ...`` under uwsgi."""

import uuid

import yaml

# osc-placement's default version is "1" (negotiate): the plugin then
# speaks 1.42, the first version whose profiles have alternatives.
DEFAULT = '1'


def _refused_create(openstack, *args, version=DEFAULT):
    """``openstack device profile create ARGS``, which is to fail."""
    return openstack('device', 'profile', 'create', *args, version=version,
                     parse=False, check=False)


def test_device_profile_lifecycle(openstack):
    created = openstack(
        'device', 'profile', 'create', 'cli-fpga',
        '--group', 'resources:fpga=1,trait:hw-cpu-x86-avx=required,'
                   'accel:bitstream_name=type=gbs',
        '--group', 'resources:VGPU=2,accel:attach_target=VM',
        '--description', 'two groups', version=DEFAULT)
    assert created['name'] == 'cli-fpga'
    assert created['description'] == 'two groups'
    assert uuid.UUID(created['uuid'])
    # Normalised names, groups and keys in the order given.
    assert created['groups'] == [
        {'resources:FPGA': '1', 'trait:HW_CPU_X86_AVX': 'required',
         'accel:bitstream_name': 'type=gbs'},
        {'resources:VGPU': '2', 'accel:attach_target': 'VM'}]
    assert created['alternatives'] == []
    assert created['created_at'].endswith('Z')
    assert created['updated_at'] is None

    second = openstack('device', 'profile', 'create', 'cli-vgpu',
                       '--group', 'resources:VGPU=1', version='1.40')
    assert second['description'] is None
    # 1.40 has no alternatives to show.
    assert second['alternatives'] is None

    listed = openstack('device', 'profile', 'list', '--name', 'cli-fpga',
                       '--name', 'cli-vgpu', version=DEFAULT)
    assert [(p['uuid'], p['name']) for p in listed] == [
        (created['uuid'], 'cli-fpga'), (second['uuid'], 'cli-vgpu')]
    assert listed[0]['groups'] == created['groups']

    by_name = openstack('device', 'profile', 'show', 'cli-fpga',
                        version=DEFAULT)
    by_uuid = openstack('device', 'profile', 'show', created['uuid'],
                        version=DEFAULT)
    assert by_name == by_uuid == created

    as_yaml = openstack('device', 'profile', 'show', 'cli-vgpu', '-f', 'yaml',
                        version=DEFAULT, parse=False)
    assert yaml.safe_load(as_yaml.stdout)['groups'] == [
        {'resources:VGPU': '1'}]
    as_table = openstack('device', 'profile', 'list', '--name', 'cli-vgpu',
                         '-f', 'table', version=DEFAULT, parse=False)
    assert 'cli-vgpu' in as_table.stdout
    assert second['uuid'] in as_table.stdout

    openstack('device', 'profile', 'delete', 'cli-fpga', second['uuid'],
              version=DEFAULT, parse=False)
    assert openstack('device', 'profile', 'list', '--name', 'cli-fpga',
                     '--name', 'cli-vgpu', version=DEFAULT) == []


def test_device_profile_alternatives(openstack):
    """The example of api-ref/device_profiles.md, then the refusals."""
    for name in ('CUSTOM_GPU_A100', 'CUSTOM_GPU_L40'):
        openstack('resource', 'class', 'create', name, version='1.2',
                  parse=False)
    created = openstack(
        'device', 'profile', 'create', 'a100-else-two-l40s',
        '--group', 'resources:CUSTOM_GPU_A100=1',
        '--group', 'resources:CUSTOM_GPU_L40=2', '--alternatives', '0,1',
        version=DEFAULT)
    assert created['groups'] == [{'resources:CUSTOM_GPU_A100': '1'},
                                 {'resources:CUSTOM_GPU_L40': '2'}]
    assert created['alternatives'] == [[0, 1]]
    shown = openstack('device', 'profile', 'show', 'a100-else-two-l40s',
                      version=DEFAULT)
    assert shown['alternatives'] == [[0, 1]]
    listed = openstack('device', 'profile', 'list',
                       '--name', 'a100-else-two-l40s', version=DEFAULT)
    assert [profile['alternatives'] for profile in listed] == [[[0, 1]]]
    as_table = openstack('device', 'profile', 'show', 'a100-else-two-l40s',
                         '-f', 'table', version=DEFAULT, parse=False)
    assert '[[0, 1]]' in as_table.stdout

    # Below 1.42 a profile shows no alternatives, and a body may not
    # carry them.
    assert openstack('device', 'profile', 'show', 'a100-else-two-l40s',
                     version='1.41')['alternatives'] is None
    early = _refused_create(openstack, 'cli-early',
                            '--group', 'resources:VGPU=1',
                            '--group', 'resources:PGPU=1',
                            '--alternatives', '0,1', version='1.41')
    assert early.returncode == 1
    assert "('alternatives' was unexpected)" in early.stderr

    malformed = _refused_create(openstack, 'cli-bad',
                                '--group', 'resources:VGPU=1',
                                '--alternatives', '0,first')
    assert malformed.returncode == 2
    assert 'expected group positions I,J[,K...]' in malformed.stderr
    missing = _refused_create(openstack, 'cli-bad',
                              '--group', 'resources:VGPU=1',
                              '--group', 'resources:PGPU=1',
                              '--alternatives', '0,2')
    assert missing.returncode == 1
    assert ('alternatives[0] names groups the profile does not have: 2 '
            '(it has 2, numbered from 0).') in missing.stderr

    openstack('device', 'profile', 'delete', 'a100-else-two-l40s',
              version=DEFAULT, parse=False)


def test_device_profile_errors(openstack):
    duplicate = ('device', 'profile', 'create', 'cli-dup',
                 '--group', 'resources:VGPU=1')
    openstack(*duplicate, version=DEFAULT)
    refused = openstack(*duplicate, version=DEFAULT, parse=False, check=False)
    assert refused.returncode == 1
    assert 'A device profile named cli-dup already exists.' in refused.stderr

    unknown = _refused_create(openstack, 'cli-unknown',
                              '--group', 'resources:CUSTOM_NOPE=1')
    assert unknown.returncode == 1
    assert 'Unknown resource class(es): CUSTOM_NOPE.' in unknown.stderr

    malformed = _refused_create(openstack, 'cli-bad',
                                '--group', 'resources:VGPU')
    assert malformed.returncode == 2
    assert 'expected KEY=VALUE' in malformed.stderr

    missing = openstack('device', 'profile', 'show', 'cli-nope',
                        version=DEFAULT, parse=False, check=False)
    assert missing.returncode == 1
    assert 'No device profile with uuid or name cli-nope.' in missing.stderr

    partly = openstack('device', 'profile', 'delete', 'cli-nope', 'cli-dup',
                       version=DEFAULT, parse=False, check=False)
    assert partly.returncode == 1
    assert 'Failed to delete 1 of 2 device profiles' in partly.stderr
    assert openstack('device', 'profile', 'list', '--name', 'cli-dup',
                     version=DEFAULT) == []

    # Below 1.40 the routes do not exist.
    old = openstack('device', 'profile', 'list', version='1.39',
                    parse=False, check=False)
    assert old.returncode == 1
    assert 'The resource could not be found. (HTTP 404)' in old.stderr
