"""placement_lite's plugin: ``openstack allocation candidate explain`` under
uwsgi, on a class of its own (the server is shared by the CLI tests)."""

# osc-placement's default version is "1" (negotiate): the command then
# speaks 1.41, the first version with explain.
DEFAULT = '1'
CLASS = 'CUSTOM_CLI_EXPLAIN'


def _host(openstack):
    """A provider with 4 of CLASS, in steps of 2 (osc-placement sets
    max_unit to the largest 32-bit integer)."""
    openstack('resource', 'class', 'create', CLASS, version='1.2',
              parse=False)
    host = openstack('resource', 'provider', 'create', 'cli-explain-host',
                     version='1.14')
    openstack('resource', 'provider', 'inventory', 'set', host['uuid'],
              '--resource', '%s=4' % CLASS,
              '--resource', '%s:step_size=2' % CLASS, version='1.14')
    return host['uuid']


def test_explain_steps_and_one_provider(openstack):
    host = _host(openstack)
    steps = openstack('allocation', 'candidate', 'explain',
                      'resources=%s:3' % CLASS, version=DEFAULT)
    row = {'Group': '(unsuffixed)', 'Resource class': CLASS, 'Amount': 3,
           'Of': 'providers'}
    assert steps == [
        dict(row, Step='resource_class', Kept=1, Detail=''),
        dict(row, Step='capacity', Kept=1, Detail=''),
        dict(row, Step='units', Kept=0, Detail='emptied'),
        {'Group': '(trees)', 'Step': 'all_groups', 'Resource class': None,
         'Amount': None, 'Kept': 0, 'Of': 'trees', 'Detail': 'emptied'}]

    one = openstack('allocation', 'candidate', 'explain',
                    'resources=%s:3' % CLASS, '--provider', host,
                    version='1.41')
    assert one[3] == {
        'Group': '(unsuffixed)', 'Step': 'units', 'Resource class': CLASS,
        'Amount': 3, 'Kept': None, 'Of': 'provider',
        'Detail': '%s: excluded by units (amount 3, min_unit 1, '
                  'max_unit 2147483647, '
                  'step_size 2)' % host}

    table = openstack('allocation', 'candidate', 'explain',
                      'resources=%s:2' % CLASS, '-f', 'table',
                      version=DEFAULT, parse=False)
    assert 'all_groups' in table.stdout and 'emptied' not in table.stdout


def test_explain_errors(openstack):
    malformed = openstack('allocation', 'candidate', 'explain', 'resources',
                          version=DEFAULT, parse=False, check=False)
    assert malformed.returncode == 2
    assert 'expected KEY=VALUE' in malformed.stderr

    refused = openstack('allocation', 'candidate', 'explain',
                        'resources=VCPU:1', version='1.40', parse=False,
                        check=False)
    assert refused.returncode == 1
    assert "'explain' does not match any of the regexes" in refused.stderr

    unknown = openstack('allocation', 'candidate', 'explain',
                        'resources=VCPU:1', '--provider',
                        'c11e0000-0000-4000-8000-0000000000ff',
                        version=DEFAULT, parse=False, check=False)
    assert unknown.returncode == 1
    assert ('No resource provider with uuid '
            'c11e0000-0000-4000-8000-0000000000ff to explain.'
            in unknown.stderr)
