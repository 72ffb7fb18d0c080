"""Keeps the allocation-candidates benchmark (``tests/bench``) from rotting.

The benchmark itself measures; nothing here asserts a timing. These tests
check that the cloud it builds is consistent, that the loader and every
named query work against placement_lite in-process on a tiny cloud, and that
the report renders results, including timeouts, and that the databases it
measures get their planner statistics.
"""

import collections
import json

import pytest
import sqlalchemy as sa

from placement_lite.db import tables
from tests import harness
from tests.bench import __main__ as bench
from tests.bench import builder
from tests.bench import cloud as bench_cloud
from tests.bench import growth
from tests.bench import mixed_fleet
from tests.bench import queries as bench_queries
from tests.bench import restart as bench_restart
from tests.bench import scaling
from tests.bench import steady as bench_steady
from tests.bench import storm as bench_storm
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


def test_loader_and_queries_on_tiny_cloud(environment):
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


def _steady_figures(requests, server_cpu, database_cpu, p50=0.01):
    return {'requests': requests, 'wall_seconds': requests / 100.0,
            'server_cpu': server_cpu, 'database_cpu': database_cpu,
            'p50': p50, 'p95': p50, 'failed': {}}


def test_the_steady_mix_sends_each_host_s_periodic_reads():
    cloud = bench_cloud.build(40)
    tracked = bench_steady.Tracked(cloud, 4)
    kinds = collections.Counter(request.kind for request in tracked.mix())
    providers = sum(len(tracked.trees[root.uuid]) + len(
        tracked.sharing[root.uuid]) for root in tracked.roots)
    assert len(tracked.roots) == 4
    assert kinds['allocations'] == 4 * 5
    assert kinds['in_tree'] == 4
    assert kinds['inventories'] == kinds['aggregates'] == kinds[
        'traits'] == providers
    assert kinds['sharing'] == sum(
        1 for root in tracked.roots for provider in tracked.trees[root.uuid]
        if provider.aggregates)


def test_the_steady_tables_give_cpu_per_request_and_the_ratios():
    report = {
        'hosts': 1000, 'providers': 7387, 'tracked': 2, 'clients': 8,
        'processes': 4, 'repeat': 2, 'date': '2026-12-02 01:19 UTC',
        'commit': 'abc1234', 'load': 8.0, 'load_after': 9.5,
        'mix': {'allocations': 10, 'in_tree': 2, 'inventories': 6,
                'aggregates': 6, 'traits': 6, 'sharing': 2},
        'answers': {'traits': 'same bytes'}}
    for phase in ('steady', 'root'):
        report[phase] = {
            'reference': [_steady_figures(100, 0.8, 0.2)] * 2,
            'placement_lite': [_steady_figures(100, 0.15, 0.05),
                               _steady_figures(100, 0.25, 0.05)],
            'bare_falcon': [_steady_figures(100, 0.01, 0.0)] * 2}
    report['routes'] = {kind: {
        'reference': [_steady_figures(10, 0.08, 0.02, 0.04)],
        'placement_lite': [_steady_figures(10, 0.015, 0.005, 0.01)],
        'placement_lite at 0f032fd': [_steady_figures(10, 0.03, 0.01)]}
        for kind, _what, _version in bench_steady.READS}
    report['writes'] = {kind: {
        name: dict(_steady_figures(8, 0.08 / divisor, 0.0), writes=8,
                   cpu_per_write=0.01 / divisor)
        for name, divisor in (('reference', 1), ('placement_lite', 4))}
        for kind, _what, _version in bench_steady.WRITES}
    steady_rows = bench_steady.steady_table(report).splitlines()
    # 16 requests per host and period: 10,000 hosts send 533 a second.
    assert steady_rows[2:5] == [
        '| the mix | reference | 100 | 8.00 ms | 2.00 ms | 10.00 ms '
        '(10.00 ms) | 1.0x | 100.0x | 5.33 |',
        '| the mix | placement_lite | 100 | 2.00 ms | 0.50 ms | 2.50 ms '
        '(2.00-3.00 ms) | 4.0x | 25.0x | 1.33 |',
        '| the mix | bare_falcon | 100 | 0.10 ms | 0.00 ms | 0.10 ms '
        '(0.10 ms) | 100.0x | 1.0x | 0.05 |']
    assert steady_rows[5].startswith('| GET / | reference | 100 |')
    assert steady_rows[5].endswith('| - |')
    routes_rows = bench_steady.routes_table(report).splitlines()
    assert routes_rows[0].count('placement_lite at 0f032fd') == 1
    assert routes_rows[6] == (
        '| `GET /resource_providers/{uuid}/traits` | 1.6 | 3.00 | 10.00 ms '
        '| 2.00 ms | 5.0x | 4.00 ms | 40.00 ms | 10.00 ms | same bytes |')
    assert bench_steady.writes_table(report).splitlines()[4] == (
        "| PUT a host's aggregates (one added, then removed) | 1.19 | 8 "
        '| 100 | 10.00 ms | 100 | 2.50 ms | 4.0x |')
    section = bench_steady.section([report])
    assert section.startswith(bench_steady.TITLE + '\n')
    assert '### 1,000 compute hosts\n\n1,000 compute hosts (7,387 ' \
        'providers); the periodic reads of 2 of them' in section
    assert section.endswith(bench_steady.PROFILE)


def test_a_mixed_fleet_s_numbers_and_checks_are_tabled():
    records = [{'host': ['root', 'child'], 'seconds': seconds,
                'statuses': {'reference': reference,
                             'placement_lite': [204, 204, 204, 409]},
                'errors': [], 'claimed': {}, 'reference_claims': []}
               for seconds, reference in ((0.2, [204, 500]), (2.4, [409, 204]),
                                          (0.3, [204, None]))]
    checked = {'over_capacity': [['h-numa0', 'VCPU', 7, 5.0, 2],
                                 ['h2-numa0', 'VCPU', 6, 5.0, 0]],
               'exact': True, 'usages_differ': [['reference', '/usages']]}
    result = mixed_fleet.summary(records, 9, [['placement_lite waits']] * 4,
                                 checked)
    assert mixed_fleet.unexplained_overages(checked) == [
        ['h2-numa0', 'VCPU', 6, 5.0, 0]]
    assert mixed_fleet.table({'mysql': {'mixed': result}}).splitlines()[
        2:] == [
        '| mysql | mixed | %s | %s | 9 (4 with placement_lite) | 0.3 s '
        "| 2.4 s | over capacity: 2 providers, **1 not by the reference's "
        'retried claims**; **usages differ: 1** |' % (side, counts)
        for side, counts in (('reference', '6 | 3 | 1 | 2'),
                             ('placement_lite', '12 | 9 | 3 | 0'))]


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


def _written(environment, hosts=3):
    """A tiny benchmark cloud, written in bulk into ``environment``."""
    cloud = bench_cloud.build(hosts, storage_group_size=1)
    builder.write(environment.db, cloud)
    return cloud


def test_nova_weighs_hosts_by_free_memory_over_the_tree():
    def summary(root, memory=None, traits=()):
        resources = {} if memory is None else {
            'MEMORY_MB': {'capacity': memory[0], 'used': memory[1]}}
        return {'root_provider_uuid': root, 'resources': resources,
                'traits': list(traits)}

    answer = {
        'provider_summaries': {
            'a': summary('a'), 'a0': summary('a', (100, 90)),
            'a1': summary('a', (100, 0)),
            'b': summary('b'), 'b0': summary('b', (100, 0)),
            'b1': summary('b', (100, 0)),
            'disk': summary('disk', (1000, 0),
                            ['MISC_SHARES_VIA_AGGREGATE'])},
        'allocation_requests': [
            {'allocations': {'disk': 1, 'a0': 1}},
            {'allocations': {'a1': 2}},
            {'allocations': {'b1': 3}}, {'allocations': {'b0': 4}}]}
    assert bench_storm.weighed_hosts(answer) == [
        ('b', {'allocations': {'b1': 3}}),
        ('a', {'allocations': {'disk': 1, 'a0': 1}})]


def test_a_conflict_is_told_by_its_body():
    cloud = bench_cloud.build(3)
    kinds = bench_storm.provider_kinds(cloud)
    numa = cloud.landmarks['busy_numa']
    capacity = json.dumps({'errors': [{
        'status': 409, 'code': 'placement.undefined_code',
        'detail': "Unable to allocate inventory: Unable to create allocation "
                  "for 'MEMORY_MB' on resource provider '%s'. The requested "
                  "amount would exceed the capacity." % numa}]})
    generation = json.dumps({'errors': [{
        'status': 409, 'code': 'placement.concurrent_update',
        'detail': 'resource provider generation conflict'}]})
    assert bench_storm.conflict_reason(capacity, kinds) == (
        'capacity: MEMORY_MB on numa0')
    assert bench_storm.conflict_reason(generation, kinds) == (
        'generation conflict')
    # Roots: 3 compute hosts and the 3 wide trees; PFs: 4 per host, 8 per
    # wide VF tree; the wide PCI tree's 8 devices.
    assert collections.Counter(kinds.values()) == {
        'host': 6, 'numa0': 3, 'numa1': 3, 'pf': 28, 'fpga': 1, 'dev0': 1,
        'dev1': 1, 'dev2': 1, 'dev3': 1, 'dev4': 1, 'dev5': 1, 'dev6': 1,
        'dev7': 1}


def test_variants_name_the_settings_of_each_service():
    found = bench_storm.variants(list(bench_storm.VARIANTS), [16, 256])
    assert [(variant.name, variant.service) for variant in found] == [
        ('lite', 'placement_lite'), ('lite-order', 'placement_lite'),
        ('lite-dispersed-16', 'placement_lite'),
        ('lite-dispersed-256', 'placement_lite'),
        ('reference', 'reference'), ('reference-randomized', 'reference')]
    assert found[0].config() == ''
    assert found[3].config() == (
        '[placement]\n'
        'allocation_candidates_rank_by = spread:MEMORY_MB,VCPU\n'
        'allocation_candidates_dispersion = 256\n')
    assert found[5].config() == (
        '[placement]\nrandomize_allocation_candidates = true\n')
    assert [variant.name for variant in bench_storm.variants(
        ['lite', 'reference', 'lite-dispersed'], only='reference')] == [
            'reference']


def _instances_on(hosts, roots):
    """How many instances of the flavor's memory each of ``roots`` holds."""
    return [hosts.memory(root)[0] // bench_storm.FLAVOR['MEMORY_MB']
            for root in roots]


def test_the_ideal_places_each_instance_on_the_host_with_most_free_memory():
    cloud = bench_cloud.build(3, storage_group_size=1)
    hosts = bench_storm.Hosts(cloud)
    roots = [bench_cloud.make_uuid('cn%05d' % index) for index in range(3)]
    # The wide trees have no memory: the three compute hosts, running 1, 2
    # and 3 instances.
    assert hosts.fitting() == roots
    assert _instances_on(hosts, roots) == [1, 2, 3]
    assert hosts.memory(roots[0]) == (8192, 2 * (196608 - 4096))
    # cn00001's disk is the sharing provider's.
    assert hosts.allocation(roots[1]) == {
        bench_cloud.make_uuid('cn00001-numa0'): {'VCPU': 4,
                                                 'MEMORY_MB': 8192},
        bench_cloud.make_uuid('shared-storage001'): {'DISK_GB': 80}}
    assert bench_storm.Hosts(
        cloud, forbidden=('HW_CPU_X86_AVX2',)).fitting() == [roots[1]]

    ideal = hosts.copy()
    # Ties go to the first created host.
    assert ideal.place(4) == {roots[0]: 3, roots[1]: 1}
    assert _instances_on(ideal, roots) == [4, 3, 3]
    assert _instances_on(hosts, roots) == [1, 2, 3]
    ideal = hosts.copy()
    # cn00000's disk takes 11 more instances, cn00002's 10: then only
    # the host on shared storage fits.
    ideal.place(33)
    assert _instances_on(ideal, roots) == [12, 14, 13]
    ideal.place(3)
    assert _instances_on(ideal, roots) == [12, 17, 13]


def test_the_spread_achieved_is_told_against_the_ideal():
    cloud = bench_cloud.build(3, storage_group_size=1)
    fresh = bench_storm.Hosts(cloud)
    roots = fresh.fitting()
    memory = {root: fresh.memory(root) for root in roots}
    # Both instances on the fullest host: 3 + 2 of 47.
    memory[roots[2]] = (5 * 8192, memory[roots[2]][1])
    found = bench_storm.spread(fresh, memory,
                               collections.Counter({roots[2]: 2}), 2)
    assert found == {'hosts': 3, 'largest_share': 5 / 47,
                     'ideal_share': 3 / 47, 'instance_share': 1 / 47,
                     'chosen_share': 5 / 47, 'ideal_chosen_share': 3 / 47,
                     'most_instances': 5, 'ideal_most_instances': 3}
    assert bench_storm.spread(fresh, memory, collections.Counter(),
                              0)['chosen_share'] is None


def test_each_host_s_memory_is_read_from_the_database(environment):
    cloud = _written(environment)
    fresh = bench_storm.Hosts(cloud)
    with environment.db.engine.connect() as conn:
        memory = bench_storm.memory_of_hosts(conn)
    assert memory == {root: fresh.memory(root) for root in fresh.fitting()}


def _storm_result(variant, placed, conflicts, spread=None):
    result = {'service': variant.split('-')[0], 'schedulers': 32,
              'instances': 200, 'placed': placed, 'failed': 200 - placed,
              'per_second': 4.0, 'place_seconds': [0.5],
              'candidates_seconds': [0.2], 'claim_seconds': [0.1],
              'conflicts': conflicts, 'reasks': 3, 'server_cpu': 20.0,
              'database_cpu': 4.0, 'over_capacity': 0, 'usages_match': True,
              'vcpu_on': {'numa0': placed} if placed else {}}
    if spread is not None:
        result.update(variant=variant, spread=spread)
    return result


def test_the_storm_tables_show_each_variant_and_its_spread():
    spread = {'hosts': 900, 'largest_share': 0.1064, 'ideal_share': 0.0851,
              'instance_share': 0.0213, 'chosen_share': 0.1064,
              'ideal_chosen_share': 0.0426, 'most_instances': 5,
              'ideal_most_instances': 4}
    report = {'hosts': 1000, 'providers': 7387, 'date': 'today',
              'load': 1.0, 'load_after': 2.0, 'storms': [
                  _storm_result('lite-dispersed-64', 200,
                                {'capacity: DISK_GB on host': 50}, spread),
                  _storm_result('lite-order', 160, {}, dict(
                      spread, largest_share=0.1100, chosen_share=None)),
                  # A report of before the variants.
                  _storm_result('reference', 0, {})]}
    assert bench_storm.table(report).splitlines()[2:] == [
        '| lite-dispersed-64 | 32 | 200 / 200 | 4.00 | 500 ms | 500 ms '
        '| 200 ms | 200 ms | 100 ms | 100 ms | 50 | 0.25 | 3 | 0 | 100 ms '
        '| 20 ms | ok |',
        '| lite-order | 32 | 160 / 200 | 4.00 | 500 ms | 500 ms | 200 ms '
        '| 200 ms | 100 ms | 100 ms | 0 | 0.00 | 3 | 40 | 125 ms | 25 ms '
        '| ok |',
        '| reference | 32 | 0 / 200 | 4.00 | 500 ms | 500 ms | 200 ms '
        '| 200 ms | 100 ms | 100 ms | 0 | - | 3 | 200 | 20000 ms '
        '| 4000 ms | ok |']
    assert bench_storm.spread_table(report).splitlines()[2:] == [
        '| lite-dispersed-64 | 32 | 900 | 10.6% | 8.5% | 2.1% | yes '
        '| 10.6% | 4.3% | 5 | 4 |',
        '| lite-order | 32 | 900 | 11.0% | 8.5% | 2.1% | **no** | - '
        '| 4.3% | 5 | 4 |']
    assert bench_storm.reasons_table(report).splitlines()[2:] == [
        '| lite-dispersed-64 | 32 | capacity: DISK_GB on host: 50 '
        '| numa0: 200 |',
        '| lite-order | 32 | - | numa0: 160 |',
        '| reference | 32 | - |  |']
    page = bench_storm.markdown([report])
    assert '- `lite-dispersed`: lite-order and ' in page
    assert bench_storm.spread_table(report) in page
    report['storms'] = report['storms'][2:]
    assert bench_storm.spread_table(report) == ''
    assert '| largest memory share |' not in bench_storm.markdown([report])


class _RefusingFirst(_InProcess):
    """Answers the first request of ``method`` with a 409 of ``body``."""

    def __init__(self, environment, method, body):
        super().__init__(environment)
        self.method, self.body = method, body

    def fetch(self, method, path, body=None, version='1.39'):
        if method == self.method and self.body is not None:
            refusal, self.body = self.body, None
            return 409, refusal, 0.001
        return super().fetch(method, path, body, version)


def test_a_scheduler_claims_the_best_host_then_an_alternate(environment):
    cloud = _written(environment)
    kinds = bench_storm.provider_kinds(cloud)
    refusal = json.dumps({'errors': [{
        'code': 'placement.concurrent_update', 'detail': '...'}]}).encode()
    scheduler = bench_storm.Scheduler(
        _RefusingFirst(environment, 'PUT', refusal), kinds)
    first, second = (bench_cloud.make_uuid('storm-%d' % number)
                     for number in range(2))

    record = scheduler.place(first)
    assert (record['placed'], record['conflicts'], record['reasks'],
            len(record['candidates']), len(record['claims'])) == (
                True, ['generation conflict'], 0, 1, 2)
    record = scheduler.place(second)
    assert (record['placed'], record['conflicts'], len(record['claims'])) == (
        True, [], 1)
    usages = environment.request('GET', '/usages?project_id=%s'
                                 % bench_storm.PROJECT, version='1.36')[2]
    assert usages['usages'] == {name: 2 * amount for name, amount
                                in bench_storm.FLAVOR.items()}
    with environment.db.engine.connect() as conn:
        chosen = bench_storm.hosts_of(conn, bench_storm.PROJECT)
    assert sum(chosen.values()) == 2 and set(chosen) <= set(
        bench_storm.Hosts(cloud).trees)


def test_a_nova_compute_start_reads_and_writes_back_its_tree(environment):
    cloud = _written(environment)
    refusal = json.dumps({'errors': [{
        'code': 'placement.concurrent_update', 'detail': '...'}]}).encode()
    compute = bench_restart.NovaCompute(
        _RefusingFirst(environment, 'PUT', refusal))
    root = cloud.landmarks['busy_host']
    before = environment.request('GET', '/resource_providers?in_tree=%s'
                                 % root)[2]['resource_providers']

    compute.start(root)
    # A tree of 7 providers: the host, 2 NUMA nodes, 4 PFs; the first
    # PUT refused once, read again and written.
    counts = {route: len(seconds) for route, seconds
              in compute.samples.items()}
    assert counts == {'GET in_tree': 1, 'GET sharing': 1,
                      'GET inventories': 8, 'GET traits': 7,
                      'GET aggregates': 7, 'PUT inventories': 8,
                      'PUT traits': 7, 'PUT aggregates': 7}
    assert compute.statuses == {200: 45, 409: 1}
    after = environment.request('GET', '/resource_providers?in_tree=%s'
                                % root)[2]['resource_providers']
    # Inventories and aggregates written bump it, the same traits do not.
    assert [provider['generation'] for provider in after] == [
        provider['generation'] + 2 for provider in before]


def test_hosts_replayed_are_spread_over_the_cloud():
    cloud = bench_cloud.build(10)
    assert bench_restart.hosts_replayed(cloud, 3) == [
        bench_cloud.make_uuid(name) for name in ('cn00000', 'cn00003',
                                                 'cn00006')]
    assert len(bench_restart.hosts_replayed(cloud, None)) == 10


def _timed(p50, hosts=None, status=200):
    return {'status': status, 'samples': [p50] if status == 200 else [],
            'p50': p50, 'p95': p50, 'count': 1, 'hosts': hosts}


def _region_report(hosts, providers, scale, rss_kb):
    """A query report of ``hosts``: its bounded queries' p50 grown by
    ``scale`` over 1,000 hosts' and its unbounded ones' as the hosts."""
    grown = hosts / 1000
    path = '/allocation_candidates?resources=VCPU:1'

    def entry(name, params, lite, reference):
        return {'name': name, 'path': path + params,
                'placement_lite': lite, 'reference': reference}

    return {'hosts': hosts, 'providers': providers,
            'memory': {'placement_lite': [rss_kb, 1000]},
            'first_requests': {'nova_flavor': {'placement_lite': 0.5 * grown}},
            'queries': [
                {'name': 'root', 'path': '/', 'placement_lite': _timed(0.001)},
                entry('nova_flavor', '&limit=1000',
                      _timed(0.02 * scale, hosts=1000), _timed(0.5)),
                entry('nova_flavor_50', '&limit=50', _timed(0.01 * scale),
                      _timed(0.4)),
                entry('simple', '', _timed(0.01 * grown),
                      _timed(0.5 * grown) if hosts < 50000
                      else _timed(None, status='timeout')),
                entry('in_tree', '&in_tree=x', _timed(0.002), _timed(0.01)),
                entry('none_fits', '', _timed(0.003), _timed(0.01)),
                entry('simple_explain', '&explain=true', _timed(1.0), None)]}


def test_goals_say_where_the_engine_stands():
    reports = [_region_report(1000, 7387, 1.0, 100 * 1024),
               _region_report(20000, 147000, 1.2, 800 * 1024),
               _region_report(50000, 368000, 6.0, 2000 * 1024)]
    assert scaling.goals(reports) == [
        ("nova's flavor, limit=1000: p50 <= 100 ms with 1,000 distinct hosts "
         'at 50,000 hosts', '120 ms, 1000 hosts', False),
        ("nova's flavor, limit=50: p50 <= 30 ms at 50,000 hosts", '60 ms',
         False),
        ('every bounded query: p50 <= 200 ms at 50,000 hosts',
         'slowest: nova_flavor 120 ms', True),
        ('every unbounded query: >= 10x the reference, or the reference past '
         'the timeout at 50,000 hosts', 'lowest: none_fits 3.3x', False),
        ("each worker's RSS <= 1.5 GB at 50,000 hosts", 'largest: 2000 MB',
         False),
        ('bounded queries flat within 30%, 1,000 to 50,000 hosts',
         'worst: nova_flavor 6.00x', False),
        ('unbounded queries no worse than linear, 1,000 to 50,000 hosts',
         'worst: simple 20.0x for 20.0x the hosts (1,000 to 20,000)', True),
        ('the first request after a worker starts <= 5 s at 50,000 hosts',
         'slowest: nova_flavor 25.0 s', False),
        ('in_tree and none_fits: p50 <= 2.5x GET / at every size',
         'worst: none_fits 3.0x at 50,000 hosts', False)]
    assert scaling.goals_table(reports).splitlines()[2] == (
        "| nova's flavor, limit=1000: p50 <= 100 ms with 1,000 distinct hosts "
        'at 50,000 hosts | 120 ms, 1000 hosts | **missed** |')


def test_the_chart_is_drawn_from_the_reports(tmp_path):
    reports = [_region_report(1000, 7387, 1.0, 100 * 1024),
               _region_report(5000, 36824, 1.1, 200 * 1024)]
    path = tmp_path / 'chart.png'
    scaling.chart(reports, str(path))
    assert path.read_bytes()[:8] == b'\x89PNG\r\n\x1a\n'


def test_first_requests_are_tabled_beside_the_p50():
    report = {'queries': [{'name': 'limit50',
                           'placement_lite': _timed(0.01),
                           'reference': _timed(0.3)}],
              'first_requests': {'limit50': {'placement_lite': 1.5,
                                             'reference': 'timeout'}}}
    assert bench.first_requests_table(report).splitlines()[2:] == [
        '| limit50 | 1500.0 ms | 10.0 ms | timeout | 300.0 ms |']


class _Clocked:
    """A client whose requests take ``seconds`` (of a patched clock)."""

    def __init__(self, clock, seconds):
        self.clock, self.seconds = clock, seconds

    def fetch(self, method, path, version='1.39', timeout=None):
        self.clock[0] += self.seconds
        return 200, b'{"allocation_requests": [], "provider_summaries": {}}', (
            self.seconds)


def test_a_slow_service_does_not_cut_the_other_s_repetitions(monkeypatch):
    clock = [0.0]
    monkeypatch.setattr(bench.time, 'monotonic', lambda: clock[0])
    query = bench_queries.Query('q', 'a query', ())
    args = bench.parse_args(['--warmup', '1', '--repetitions', '5',
                             '--query-budget', '90'])
    results = bench.time_query({
        'placement_lite': (_Clocked(clock, 1.0), None, query),
        'reference': (_Clocked(clock, 40.0), None, query)}, args)
    # The reference: 40 s of warm-up, then timed until past 90 s.
    assert (len(results['placement_lite']['samples']),
            len(results['reference']['samples'])) == (5, 2)


def test_a_run_of_one_service_goes_into_the_report_of_both():
    lite, slow = _timed(0.1), _timed(0.2)
    existing = {'queries': [
        {'name': 'simple', 'placement_lite': _timed(5.0),
         'reference': _timed(50.0)},
        {'name': 'rp_all', 'placement_lite': lite, 'reference': slow}],
        'first_requests': {'simple': {'placement_lite': 9.0,
                                      'reference': 'timeout'}},
        'memory': {'placement_lite': [1], 'reference': [2]}}
    measured = {'queries': [{'name': 'simple',
                             'placement_lite': _timed(4.0)}],
                'first_requests': {'simple': {'placement_lite': 8.0}},
                'memory': {'placement_lite': [3]}, 'date': 'today',
                'commit': 'abc', 'load': [1.0, 2.0]}
    merged = bench.into_report(existing, measured, 'placement_lite')
    assert [(entry['placement_lite']['p50'], entry['reference']['p50'])
            for entry in merged['queries']] == [(4.0, 50.0), (0.1, 0.2)]
    assert merged['first_requests'] == {
        'simple': {'placement_lite': 8.0, 'reference': 'timeout'}}
    assert merged['memory'] == {'placement_lite': [3], 'reference': [2]}
    assert merged['note'] == (
        "placement_lite's results of simple are those of a run of it alone "
        '(today, commit abc, load average 1.0 before, 2.0 after).')


def test_the_chart_of_each_query_per_cloud_size(tmp_path):
    def entry(name, lite, reference):
        return {'name': name, 'path': '/allocation_candidates?x',
                'placement_lite': {'status': 200, 'samples': [lite],
                                   'p50': lite},
                'reference': reference}

    reports = [{'hosts': hosts, 'timeout': 60.0, 'queries': [
        entry('simple', 0.1 * hosts, {'status': 200, 'samples': [1.0],
                                      'p50': 1.0}),
        entry('wide', 0.2, {'status': 'timeout', 'samples': [],
                            'p50': None}),
        dict(entry('simple_explain', 0.1, None), explains='simple')]}
        for hosts in (1, 2)]
    chart = tmp_path / 'queries.png'

    scaling.queries_chart(reports, str(chart))

    assert chart.read_bytes()[:8] == b'\x89PNG\r\n\x1a\n'


class _Recorded:
    """A client of one cloud size: answers in the seconds given, in turn,
    and notes each request's size in ``order``."""

    def __init__(self, size, seconds, order):
        self.size, self.seconds, self.order = size, seconds, order

    def fetch(self, method, path, version='1.39', timeout=None):
        self.order.append(self.size)
        return 200, b'{}', self.seconds.pop(0)


def test_growth_times_the_sizes_in_turns_and_tables_the_ratio():
    order = []
    query = bench_queries.Query('simple', 'a query', ())
    p50s = growth.timed_in_turns(
        {5000: _Recorded(5000, [9.0, 1.0, 3.0, 2.0], order),
         20000: _Recorded(20000, [9.0, 4.0, 12.0, 8.0], order)},
        {5000: query, 20000: query}, 3)
    # One warm-up each, not timed, then one request of each size in turn.
    assert order == [5000, 20000] * 4
    assert p50s == {5000: 2.0, 20000: 8.0}
    assert growth.table([5000, 20000], {'simple': p50s}) == (
        '| query | 5,000 hosts | 20,000 hosts | growth, 4.0x the hosts |\n'
        '|---|---:|---:|---:|\n'
        '| simple | 2000.0 ms | 8000.0 ms | 4.00x |')


def test_growth_times_the_candidates_queries_without_a_limit():
    assert sorted(growth.unbounded(bench_cloud.build(20))) == [
        'in_tree', 'isolate_all', 'member_of', 'member_of_100', 'none_fits',
        'required_traits', 'root_required', 'sharing', 'simple']


def _hosts_served(env, query):
    """The names of the hosts the candidates of ``query`` take from."""
    status, _headers, body = env.request('GET', query.path,
                                         version=query.version)
    assert status == 200, body
    summaries = body['provider_summaries']
    names = {provider.uuid: provider.name for provider in env.providers}
    return {names[summaries[uuid]['root_provider_uuid']]
            for request in body['allocation_requests']
            for uuid in request['allocations']
            if 'MISC_SHARES_VIA_AGGREGATE' not in summaries[uuid]['traits']}


def test_numa_hosts_serve_nova_split_where_flat_hosts_serve_it(backend):
    """The can_split benchmark's layouts (tests/bench/cloud.py): on the
    flat cloud nova's flavor fits every host but the full ones; on the
    NUMA cloud the fragmented hosts (every tenth, from 8) fit it only
    split, each of its classes over both nodes, and the same hosts fit
    it with can_split as on the flat cloud."""
    served = {}
    for layout in (bench_cloud.NUMA, bench_cloud.FLAT):
        cloud = bench_cloud.build(20, layout=layout)
        env = harness.Environment(backend)
        env.providers = cloud.providers
        try:
            builder.write(env.db, cloud)
            named = {query.name: query for query in
                     bench_queries.named_queries(cloud)
                     + bench_queries.split_queries()}
            served[layout, 'nova_flavor'] = _hosts_served(
                env, named['nova_flavor'])
            if layout == bench_cloud.NUMA:
                split = named['nova_flavor_split_all']
                served[layout, 'split'] = _hosts_served(env, split)
                status, _headers, body = env.request(
                    'GET', split.path + '&in_tree=%s'
                    % bench_cloud.make_uuid('cn00008'), version=split.version)
                assert sorted(sorted(r['resources'].items()) for r in
                              body['allocation_requests'][0][
                                  'allocations'].values()) == [
                    [('DISK_GB', 80)],
                    [('MEMORY_MB', 4096), ('VCPU', 2)],
                    [('MEMORY_MB', 4096), ('VCPU', 2)]]
        finally:
            env.close()
    every = {'cn%05d' % index for index in range(20) if index % 10 != 9}
    assert served[bench_cloud.FLAT, 'nova_flavor'] == every
    assert served[bench_cloud.NUMA, 'split'] == every
    assert served[bench_cloud.NUMA, 'nova_flavor'] == every - {
        'cn00008', 'cn00018'}
