"""placement_lite's plugin: ``--can-split`` of ``openstack allocation
candidate rank``, ``claim`` and ``explain`` under uwsgi, on a class of
its own (the server is shared by the CLI tests)."""

import uuid

# osc-placement's default version is "1" (negotiate): with --can-split
# the commands speak 1.44, the first version with can_split.
DEFAULT = '1'
CLASS = 'CUSTOM_SPLIT_CORE'
OWNER = ('--project', 'cli-split-project', '--user', 'cli-split-user')


def _host(openstack):
    """A host whose two NUMA nodes have 2 of CLASS each, 1 of them used:
    nova's case, 2 asked, 1 free on each node. (uuids of node0, node1.)"""
    openstack('resource', 'class', 'create', CLASS, version='1.2',
              parse=False)
    host = openstack('resource', 'provider', 'create', 'cli-split-host',
                     version='1.14')
    nodes = []
    for number in range(2):
        node = openstack('resource', 'provider', 'create',
                         'cli-split-numa%d' % number, '--parent-provider',
                         host['uuid'], version='1.14')
        openstack('resource', 'provider', 'inventory', 'set', node['uuid'],
                  '--resource', '%s=2' % CLASS, version='1.14')
        openstack('resource', 'provider', 'allocation', 'set',
                  str(uuid.uuid4()), '--allocation',
                  'rp=%s,%s=1' % (node['uuid'], CLASS),
                  '--project-id', 'cli-split-project',
                  '--user-id', 'cli-split-user', version='1.12')
        nodes.append(node['uuid'])
    return nodes


def test_rank_claim_and_explain_split(openstack):
    numa0, numa1 = _host(openstack)
    parts = '%s: %s=1; %s: %s=1' % (numa0, CLASS, numa1, CLASS)
    unsplit = openstack('allocation', 'candidate', 'rank',
                        'resources=%s:2' % CLASS, '--rank-by',
                        'spread:%s' % CLASS, version=DEFAULT)
    assert unsplit == []
    ranked = openstack('allocation', 'candidate', 'rank',
                       'resources=%s:2' % CLASS, '--rank-by',
                       'spread:%s' % CLASS, '--can-split', CLASS,
                       version=DEFAULT)
    assert [(row['Free'], row['Allocations']) for row in ranked] == [
        ('%s=0' % CLASS, parts)]
    explained = openstack('allocation', 'candidate', 'explain',
                          'resources=%s:3' % CLASS, '--can-split', CLASS,
                          version=DEFAULT)
    assert [(row['Step'], row['Kept'], row['Detail'])
            for row in explained if row['Group'] == '(unsuffixed)'] == [
        ('resource_class', 2, ''), ('capacity', 2, ''), ('units', 2, ''),
        ('split', 0, 'emptied'), ('trees', 0, '')]
    consumer = str(uuid.uuid4())
    claimed = openstack('allocation', 'candidate', 'claim',
                        'resources=%s:2' % CLASS, '--can-split', CLASS,
                        '--consumer', consumer, *OWNER, version=DEFAULT)
    assert [(row['Allocations'], row['Generation']) for row in claimed] == [
        (parts, 1)]
    shown = openstack('resource', 'provider', 'allocation', 'show',
                      consumer, version='1.12')
    assert sorted((row['resource_provider'], row['resources'])
                  for row in shown) == sorted(
        [(numa0, {CLASS: 1}), (numa1, {CLASS: 1})])


def test_can_split_below_its_version(openstack):
    refused = openstack('allocation', 'candidate', 'rank',
                        'resources=VCPU:2', '--rank-by', 'spread:VCPU',
                        '--can-split', 'VCPU', version='1.43', parse=False,
                        check=False)
    assert refused.returncode == 1
    assert "'can_split' does not match any of the regexes" in refused.stderr
