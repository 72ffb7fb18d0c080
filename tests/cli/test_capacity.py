"""placement_lite's plugin: ``openstack placement capacity`` and
``openstack placement capacity fits`` under uwsgi, on a class of their own
(the server is shared by the CLI tests)."""

CLASS = 'CUSTOM_CAPACITY_CLI'
AGGREGATE = '0a000000-0000-4000-8000-0000000000c1'


def _hosts(openstack):
    """Two hosts of CLASS: 10 (2 reserved, ratio 1.5) in AGGREGATE, and 8
    with step_size 4."""
    openstack('resource', 'class', 'create', CLASS, version='1.2',
              parse=False)
    hosts = []
    for name, inventory in (
            ('cli-capacity-a', '%s=10' % CLASS),
            ('cli-capacity-b', '%s=8' % CLASS)):
        host = openstack('resource', 'provider', 'create', name,
                         version='1.14')
        openstack('resource', 'provider', 'inventory', 'set', host['uuid'],
                  '--resource', inventory, version='1.14')
        hosts.append(host['uuid'])
    openstack('resource', 'provider', 'inventory', 'class', 'set', hosts[0],
              CLASS, '--total', '10', '--reserved', '2',
              '--allocation_ratio', '1.5', version='1.14')
    openstack('resource', 'provider', 'inventory', 'class', 'set', hosts[1],
              CLASS, '--total', '8', '--step_size', '4', version='1.14')
    openstack('resource', 'provider', 'aggregate', 'set', hosts[0],
              '--aggregate', AGGREGATE, '--generation', '2', version='1.19')
    return hosts


def test_capacity_and_fits(openstack):
    _hosts(openstack)

    rows = openstack('placement', 'capacity')
    assert [row for row in rows if row['Resource class'] == CLASS] == [
        {'Resource class': CLASS, 'Total': 18, 'Reserved': 2,
         'Capacity': 20, 'Used': 0, 'Free': 20, 'Used %': 0.0}]
    by_aggregate = openstack('placement', 'capacity', '--by', 'aggregate')
    assert [row for row in by_aggregate
            if row['Resource class'] == CLASS] == [
        {'Aggregate': '-', 'Resource class': CLASS, 'Total': 8,
         'Reserved': 0, 'Capacity': 8, 'Used': 0, 'Free': 8, 'Used %': 0.0},
        {'Aggregate': AGGREGATE, 'Resource class': CLASS, 'Total': 10,
         'Reserved': 2, 'Capacity': 12, 'Used': 0, 'Free': 12,
         'Used %': 0.0}]
    # 12 // 4 on the first host, 8 // 4 on the second.
    assert openstack('placement', 'capacity', 'fits',
                     'resources=%s:4' % CLASS) == {
        'Flavor': '%s:4' % CLASS, 'Fits': 5}
    # A step of 4 refuses 2 on the second host: 6 on the first alone.
    assert openstack('placement', 'capacity', 'fits',
                     'resources=%s:2' % CLASS) == {
        'Flavor': '%s:2' % CLASS, 'Fits': 6}


def test_a_bad_flavor(openstack):
    result = openstack('placement', 'capacity', 'fits', 'resources=VCPU',
                       parse=False, check=False)
    assert result.returncode == 1
    assert result.stderr.strip() == (
        "'VCPU' is not CLASS:AMOUNT (expected "
        "resources=VCPU:4,MEMORY_MB:8192)")
