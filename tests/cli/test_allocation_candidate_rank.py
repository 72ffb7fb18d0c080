"""placement_lite's plugin: ``openstack allocation candidate rank`` under
uwsgi, on a class of its own (the server is shared by the CLI tests)."""

# osc-placement's default version is "1" (negotiate): the command then
# speaks 1.42, the first version with ranking.
DEFAULT = '1'
CLASS = 'CUSTOM_RANKED_CLASS'


def _hosts(openstack):
    """Two providers, 4 and 8 of CLASS; the larger has CUSTOM_RANKED_GOLD."""
    openstack('resource', 'class', 'create', CLASS, version='1.2',
              parse=False)
    openstack('trait', 'create', 'CUSTOM_RANKED_GOLD', version='1.6',
              parse=False)
    uuids = []
    for name, total in (('cli-rank-small', 4), ('cli-rank-big', 8)):
        host = openstack('resource', 'provider', 'create', name,
                         version='1.14')
        openstack('resource', 'provider', 'inventory', 'set', host['uuid'],
                  '--resource', '%s=%d' % (CLASS, total), version='1.14')
        uuids.append(host['uuid'])
    openstack('resource', 'provider', 'trait', 'set', uuids[1],
              '--trait', 'CUSTOM_RANKED_GOLD', version='1.6')
    return uuids


def test_rank_spread_pack_preferred(openstack):
    small, big = _hosts(openstack)
    spread = openstack('allocation', 'candidate', 'rank',
                       'resources=%s:1' % CLASS,
                       '--rank-by', 'spread:%s' % CLASS, version=DEFAULT)
    assert spread == [
        {'Rank': 1, 'Tree': big, 'Alternatives': '', 'Preferred': 0,
         'Round': 0, 'Free': '%s=7' % CLASS,
         'Allocations': '%s: %s=1' % (big, CLASS), 'Skipped': ''},
        {'Rank': 2, 'Tree': small, 'Alternatives': '', 'Preferred': 0,
         'Round': 0, 'Free': '%s=3' % CLASS,
         'Allocations': '%s: %s=1' % (small, CLASS), 'Skipped': ''}]
    pack = openstack('allocation', 'candidate', 'rank',
                     'resources=%s:1' % CLASS, '--rank-by',
                     'pack:%s' % CLASS, '--limit', '1', version=DEFAULT)
    assert [row['Tree'] for row in pack] == [small]
    preferred = openstack('allocation', 'candidate', 'rank',
                          'resources=%s:1' % CLASS, '--rank-by',
                          'pack:%s' % CLASS, '--root-preferred',
                          'CUSTOM_RANKED_GOLD', '--limit', '1',
                          version=DEFAULT)
    assert [(row['Tree'], row['Preferred']) for row in preferred] == [
        (big, 1)]


def test_rank_errors(openstack):
    refused = openstack('allocation', 'candidate', 'rank',
                        'resources=VCPU:1', '--rank-by', 'spread:VCPU',
                        version='1.41', parse=False, check=False)
    assert refused.returncode == 1
    assert "'rank_by' does not match any of the regexes" in refused.stderr
    bad = openstack('allocation', 'candidate', 'rank', 'resources=VCPU:1',
                    '--rank-by', 'VCPU', version=DEFAULT, parse=False,
                    check=False)
    assert bad.returncode == 1
    assert ("rank_by=VCPU: the first resource class needs 'spread:' or "
            "'pack:' before it." in bad.stderr)
