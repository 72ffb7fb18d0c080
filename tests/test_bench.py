"""Keeps the allocation-candidates benchmark (``tests/bench``) from rotting.

The benchmark itself measures; nothing here asserts a timing. These tests
check that the cloud it builds is consistent, that the loader and every
named query work against placement_lite in-process on a tiny cloud, and that
the report renders results, including timeouts, and that the databases it
measures get their planner statistics.
"""

import collections

import pytest
import sqlalchemy as sa

from placement_lite.db import tables
from tests import harness
from tests.bench import __main__ as bench
from tests.bench import cloud as bench_cloud
from tests.bench import queries as bench_queries
from tests.bench import writes as bench_writes

pytestmark = pytest.mark.slow


def _capacity(inventory):
    return (inventory['total'] - inventory['reserved']) * \
        inventory['allocation_ratio']


def test_cloud_is_consistent():
    cloud = bench_cloud.build(60)
    providers = {provider.uuid: provider for provider in cloud.providers}
    assert len(providers) == len(cloud.providers)
    assert len({provider.name for provider in cloud.providers}) == len(
        cloud.providers)

    seen = set()
    for level in cloud.levels():
        for provider in level:
            assert provider.parent is None or provider.parent.uuid in seen
        seen.update(provider.uuid for provider in level)

    roots = [p for p in cloud.providers if p.name.startswith('cn')
             and p.parent is None]
    assert len(roots) == 60
    sharing = [p for p in cloud.providers
               if 'MISC_SHARES_VIA_AGGREGATE' in p.traits]
    assert [p.name for p in sharing] == ['shared-storage001']
    diskless = [p for p in roots if 'DISK_GB' not in p.inventories]
    assert all(sharing[0].aggregates[0] in p.aggregates for p in diskless)
    assert len(diskless) == bench_cloud.STORAGE_GROUP_SIZE

    used = collections.Counter()
    for consumer in cloud.consumers:
        for rp_uuid, resources in consumer.allocations.items():
            for resource_class, amount in resources.items():
                inventory = providers[rp_uuid].inventories[resource_class]
                assert amount <= inventory['max_unit']
                used[rp_uuid, resource_class] += amount
    for (rp_uuid, resource_class), amount in used.items():
        assert amount <= _capacity(providers[rp_uuid].inventories[
            resource_class])
    full = [key for key, amount in used.items()
            if key[1] == 'VCPU' and amount == _capacity(
                providers[key[0]].inventories['VCPU'])]
    assert len(full) == 2 * 6  # both NUMA nodes of hosts 9, 19, ... 59

    assert cloud.landmarks['in_tree'] == bench_cloud.make_uuid('cn00007')


def test_cloud_is_deterministic():
    first, second = bench_cloud.build(12), bench_cloud.build(12)
    assert [p.uuid for p in first.providers] == [
        p.uuid for p in second.providers]
    assert bench_queries.named_queries(first) == \
        bench_queries.named_queries(second)


def _unserved_route(environment):
    for path in ('/resource_classes', '/traits', '/allocations/%s'
                 % bench_cloud.make_uuid('nobody'),
                 '/allocation_candidates?resources=VCPU:1'):
        if environment.request('GET', path, version='1.39')[0] == 404:
            return path
    return None


def test_loader_and_queries_on_tiny_cloud(environment):
    missing = _unserved_route(environment)
    if missing:
        pytest.skip('placement_lite does not serve %s yet' % missing)
    cloud = bench_cloud.build(3, storage_group_size=1)
    bench_cloud.Loader(environment, threads=1).load(cloud)

    status, _headers, body = environment.request(
        'GET', '/resource_providers', version='1.39')
    assert status == 200
    assert len(body['resource_providers']) == len(cloud.providers)

    counts = {}
    for query in bench_queries.named_queries(cloud):
        status, _headers, body = environment.request(
            'GET', query.path, version=query.version)
        assert status == 200, (query.name, body)
        counts[query.name] = bench_queries.count(body)
        if query.candidates and counts[query.name]:
            assert bench_queries.hosts(body) >= 1, query.name
    # Nothing can serve these two, by design; everything else finds some.
    assert {name for name, found in counts.items() if found == 0} == {
        'none_fits', 'none_fits_explain', 'rp_resources_3'}
    # One provider and one inventory are shown, not counted.
    assert {name for name, found in counts.items() if found is None} == {
        'rp_show', 'rp_inventory'}
    assert counts['root'] == 1
    # VCPU and MEMORY_MB; a NUMA node, the disk and a VF.
    assert (counts['rp_inventories'], counts['consumer_allocations']) == (
        2, 3)
    # An explain variant answers what its query answers.
    for query in bench_queries.named_queries(cloud):
        if query.explains:
            assert counts[query.name] == counts[query.explains]
    assert (counts['rp_name'], counts['rp_uuid'], counts['rp_all']) == (
        1, 1, len(cloud.providers))


class _InProcess:
    """An Environment behind the HttpClient's fetch()."""

    def __init__(self, environment):
        self.environment = environment

    def fetch(self, method, path, body=None, version='1.39'):
        status, _headers, raw = self.environment.respond(method, path, body,
                                                         version)
        return status, raw, 0.001


def _holdings(environment, cloud):
    """What a round of writes may change: the busy host's usages and
    providers, the PF's inventories, the host's traits and aggregates."""
    marks = cloud.landmarks
    paths = ['/resource_providers?in_tree=%s' % marks['busy_host'],
             '/resource_providers/%s/usages' % marks['busy_numa'],
             '/resource_providers/%s/usages' % marks['busy_disk'],
             '/resource_providers/%s/inventories' % marks['busy_pf'],
             '/resource_providers/%s/traits' % marks['busy_host'],
             '/resource_providers/%s/aggregates' % marks['busy_host'],
             '/usages?project_id=%s' % marks['project']]
    held = {}
    for path in paths:
        body = environment.request('GET', path, version='1.39')[2]
        for member in ('resource_provider_generation', 'last_modified'):
            body.pop(member, None)
        for provider in body.get('resource_providers', []):
            provider.pop('generation')
        held[path] = body
    return held


def test_rounds_of_writes_leave_the_cloud_as_it_was(environment):
    """But for generations, and the PF's reserved VF, which each round
    sets to its number's parity: back as it was after an odd number."""
    cloud = bench_cloud.build(3, storage_group_size=1)
    bench_cloud.Loader(environment, threads=1).load(cloud)
    before = _holdings(environment, cloud)
    client = _InProcess(environment)

    for number in range(3):
        seconds = bench_writes.Round(client, cloud, number).run()
        assert sorted(seconds) == sorted(step for step, _ in
                                         bench_writes.STEPS)
        reserved = environment.request(
            'GET', '/resource_providers/%s/inventories/SRIOV_NET_VF'
            % cloud.landmarks['busy_pf'])[2]['reserved']
        assert reserved == number % 2

    assert _holdings(environment, cloud) == before


def test_a_refused_write_names_its_step(environment):
    cloud = bench_cloud.build(3, storage_group_size=1)
    # Nothing loaded: the claim names providers that do not exist.
    with pytest.raises(bench_writes.WriteFailed) as failed:
        bench_writes.Round(_InProcess(environment), cloud, 0).run()
    assert (failed.value.step, failed.value.status) == ('claim', 400)


def test_report_renders_results_and_timeouts():
    lite = {'status': 200, 'count': 28, 'samples': [0.01, 0.02, 0.03],
            'p50': 0.02, 'p95': 0.03, 'hosts': 9}
    report = {'timeout': 120.0, 'queries': [
        {'name': 'fast', 'placement_lite': lite,
         'reference': dict(lite, count=27, p50=0.2, p95=0.5, hosts=7)},
        {'name': 'wide', 'placement_lite': lite,
         'reference': {'status': 'timeout', 'count': None, 'samples': []}},
        {'name': 'unstable', 'placement_lite': lite,
         'reference': dict(lite, other_counts=[26, 29])},
        {'name': 'listing', 'placement_lite': dict(lite, hosts=None),
         'reference': dict(lite, hosts=None)},
    ], 'memory': {'placement_lite': [102400, 204800], 'reference': []}}
    rows = bench.table(report).splitlines()[2:]
    assert rows == [
        '| fast | 20.0 ms | 30.0 ms | 200.0 ms | 500.0 ms | 10.0x '
        '| DIFFER: 28 vs 27 | 9 / 7 |',
        '| wide | 20.0 ms | 30.0 ms | timeout | timeout | > 6000x | n/a '
        '| 9 / - |',
        '| unstable | 20.0 ms | 30.0 ms | 20.0 ms | 30.0 ms | 1.0x '
        '| DIFFER: 28 vs 28 (also 26, 29) | 9 / 9 |',
        '| listing | 20.0 ms | 30.0 ms | 20.0 ms | 30.0 ms | 1.0x '
        '| same (28) | - |',
    ]
    assert bench.explain_overhead(report) == ''
    report['queries'].append({'name': 'fast_explain', 'explains': 'fast',
                              'placement_lite': dict(lite, p50=0.025)})
    assert bench.explain_overhead(report).splitlines()[2:] == [
        '| fast | 20.0 ms | 25.0 ms | +25% |']
    assert bench.memory(report) == (
        'Resident memory of the workers, measured before the wide queries: '
        'placement_lite 300 MB in 2 workers (largest 200 MB).')
    assert bench.writes_table(report) == ''
    report['writes'] = {
        'placement_lite': {'status': 200, 'p50': {'claim': 0.004},
                           'p95': {'claim': 0.005}},
        'reference': {'status': 500, 'p50': {}, 'p95': {}}}
    rows = bench.writes_table(report).splitlines()
    assert rows[2] == ('| claim | PUT /allocations/{consumer}: a new instance '
                       '| 4.0 ms | 5.0 ms | 500 | 500 | - |')
    report['writes']['reference'] = {
        'status': 200, 'p50': {'claim': 0.01}, 'p95': {'claim': 0.02}}
    assert bench.writes_table(report).splitlines()[2] == (
        '| claim | PUT /allocations/{consumer}: a new instance '
        '| 4.0 ms | 5.0 ms | 10.0 ms | 20.0 ms | 2.5x |')
    assert len(rows) == 2 + len(bench_writes.STEPS)
    assert bench.percentile([5, 1, 4, 2, 3], 0.5) == 3
    assert bench.percentile([5, 1, 4, 2, 3], 0.95) == 5


@pytest.mark.needs('postgresql')
def test_vacuum_gathers_statistics_of_a_loaded_database():
    name = 'bench_vacuum'
    url = harness.create_postgres_database(name, migrated=True)
    engine = sa.create_engine(url)
    try:
        query = sa.text("SELECT count(*) FROM pg_stats "
                        "WHERE tablename = 'resource_classes'")
        with engine.connect() as conn:
            assert conn.execute(query).scalar() == 0
        harness.postgres_server().vacuum(name)
        with engine.connect() as conn:
            # One row per column of the table.
            assert conn.execute(query).scalar() == len(
                tables.resource_classes.columns)
    finally:
        engine.dispose()
