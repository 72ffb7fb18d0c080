"""placement_lite's plugin: ``openstack allocation candidate claim`` under
uwsgi, on a class of its own (the server is shared by the CLI tests)."""

import uuid

# osc-placement's default version is "1" (negotiate): the command then
# speaks 1.43, the first version with claims.
DEFAULT = '1'
CLASS = 'CUSTOM_CLAIMED_CLASS'
OWNER = ('--project', 'cli-claim-project', '--user', 'cli-claim-user')


def _hosts(openstack):
    """Two providers, 4 and 8 of CLASS."""
    openstack('resource', 'class', 'create', CLASS, version='1.2',
              parse=False)
    uuids = []
    for name, total in (('cli-claim-small', 4), ('cli-claim-big', 8)):
        host = openstack('resource', 'provider', 'create', name,
                         version='1.14')
        openstack('resource', 'provider', 'inventory', 'set', host['uuid'],
                  '--resource', '%s=%d' % (CLASS, total), version='1.14')
        uuids.append(host['uuid'])
    return uuids


def test_claim_one_then_a_distinct_batch(openstack):
    small, big = _hosts(openstack)
    first = str(uuid.uuid4())
    claimed = openstack('allocation', 'candidate', 'claim',
                        'resources=%s:2' % CLASS, '--consumer', first,
                        *OWNER, version=DEFAULT)
    assert claimed == [{
        'Consumer': first, 'Allocations': '%s: %s=2' % (big, CLASS),
        'Mappings': '(unsuffixed): %s' % big, 'Generation': 1}]
    packed = openstack('allocation', 'candidate', 'claim',
                       'resources=%s:1' % CLASS, '--consumer', first,
                       '--consumer-generation', '1', '--rank-by',
                       'pack:%s' % CLASS, *OWNER, version=DEFAULT)
    assert [(row['Allocations'], row['Generation']) for row in packed] == [
        ('%s: %s=1' % (small, CLASS), 2)]
    batch = [str(uuid.uuid4()), str(uuid.uuid4())]
    spread = openstack('allocation', 'candidate', 'claim',
                       'resources=%s:1' % CLASS, '--consumer', batch[0],
                       '--consumer', batch[1], '--distinct-trees', *OWNER,
                       version=DEFAULT)
    assert [(row['Consumer'], row['Allocations']) for row in spread] == [
        (batch[0], '%s: %s=1' % (big, CLASS)),
        (batch[1], '%s: %s=1' % (small, CLASS))]


def test_claim_errors(openstack):
    consumer = str(uuid.uuid4())
    too_old = openstack('allocation', 'candidate', 'claim',
                        'resources=VCPU:1', '--consumer', consumer, *OWNER,
                        version='1.42', parse=False, check=False)
    assert too_old.returncode == 1
    assert 'The resource could not be found' in too_old.stderr
    openstack('resource', 'class', 'create', 'CUSTOM_CLAIMED_NOWHERE',
              version='1.2', parse=False)
    nothing = openstack('allocation', 'candidate', 'claim',
                        'resources=CUSTOM_CLAIMED_NOWHERE:1', '--consumer',
                        consumer, *OWNER, version=DEFAULT, parse=False,
                        check=False)
    assert nothing.returncode == 1
    assert ('No allocation candidate fits the request: the unsuffixed group: '
            'no provider left at step' in nothing.stderr)


def test_claim_a_batch_in_one_aggregate(openstack):
    """--same-aggregate: the roomiest host, in no aggregate, ranks first
    but is never taken; both consumers pack onto the host in a rack."""
    packed_class = 'CUSTOM_CLAIMED_PACKED'
    openstack('resource', 'class', 'create', packed_class, version='1.2',
              parse=False)
    hosts = {}
    for name, total in (('cli-claim-loose', 8), ('cli-claim-racked', 4)):
        host = openstack('resource', 'provider', 'create', name,
                         version='1.14')
        openstack('resource', 'provider', 'inventory', 'set', host['uuid'],
                  '--resource', '%s=%d' % (packed_class, total),
                  version='1.14')
        hosts[name] = host['uuid']
    openstack('resource', 'provider', 'aggregate', 'set',
              hosts['cli-claim-racked'], '--aggregate', str(uuid.uuid4()),
              '--generation', '1', version='1.19')
    batch = [str(uuid.uuid4()), str(uuid.uuid4())]
    packed = openstack('allocation', 'candidate', 'claim',
                       'resources=%s:1' % packed_class, '--consumer',
                       batch[0], '--consumer', batch[1], '--same-aggregate',
                       *OWNER, version=DEFAULT)
    racked = hosts['cli-claim-racked']
    assert [(row['Consumer'], row['Allocations']) for row in packed] == [
        (batch[0], '%s: %s=1' % (racked, packed_class)),
        (batch[1], '%s: %s=1' % (racked, packed_class))]
    both = openstack('allocation', 'candidate', 'claim',
                     'resources=%s:1' % packed_class, '--consumer',
                     str(uuid.uuid4()), '--distinct-trees',
                     '--same-aggregate', *OWNER, version=DEFAULT,
                     parse=False, check=False)
    assert both.returncode != 0
    assert 'not allowed with argument' in both.stderr
