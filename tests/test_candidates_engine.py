"""The allocation-candidates engine on worlds written straight into the
database: exact candidate sets, and bounded work under ``limit``."""

import gc
import time
import types

import pytest

from placement_lite import engine
from placement_lite.db import candidates as db_candidates
from placement_lite.db import cloud
from placement_lite.db.cloud import view
from placement_lite.engine import combine
from placement_lite.engine import windows as windows_of
from placement_lite.engine import search
from placement_lite.handlers import candidates_answer
from tests import candidate_worlds as worlds
from tests import harness

U = worlds.uuid_of


def _allocation_sets(body):
    """Each request as {provider name-uuid: resources}, order-free."""
    return sorted(
        sorted((uuid, sorted(r['resources'].items()))
               for uuid, r in request['allocations'].items())
        for request in body['allocation_requests'])


FLAT = [
    {'name': 'small', 'inventories': {
        'VCPU': 4, 'MEMORY_MB': {'total': 2048, 'step_size': 256},
        'DISK_GB': {'total': 100, 'min_unit': 10, 'max_unit': 50}}},
    {'name': 'big', 'inventories': {
        'VCPU': {'total': 16, 'allocation_ratio': 2.0},
        'MEMORY_MB': {'total': 8192, 'reserved': 4096},
        'DISK_GB': 500},
     'used': {'VCPU': 30}},
]


def test_flat_capacity_and_unit_rules(environment):
    worlds.load_into_db(environment.db, FLAT)
    # big has 32 VCPU of capacity with 30 used: 2 left.
    body = worlds.candidates(environment, 'resources=VCPU:2')
    assert _allocation_sets(body) == sorted([
        [(U('small'), [('VCPU', 2)])], [(U('big'), [('VCPU', 2)])]])
    body = worlds.candidates(environment, 'resources=VCPU:3')
    assert _allocation_sets(body) == [[(U('small'), [('VCPU', 3)])]]
    # step_size 256 on small's memory.
    body = worlds.candidates(environment, 'resources=MEMORY_MB:300')
    assert _allocation_sets(body) == [[(U('big'), [('MEMORY_MB', 300)])]]
    # min_unit 10 and max_unit 50 on small's disk.
    body = worlds.candidates(environment, 'resources=DISK_GB:5')
    assert _allocation_sets(body) == [[(U('big'), [('DISK_GB', 5)])]]
    body = worlds.candidates(environment, 'resources=DISK_GB:60')
    assert _allocation_sets(body) == [[(U('big'), [('DISK_GB', 60)])]]
    body = worlds.candidates(environment, 'resources=VCPU:1,DISK_GB:20')
    assert len(body['allocation_requests']) == 2
    assert body['provider_summaries'][U('big')]['resources']['VCPU'] == {
        'capacity': 32, 'used': 30}
    assert body['provider_summaries'][U('big')]['resources'][
        'MEMORY_MB'] == {'capacity': 4096, 'used': 0}


def test_limit_returns_first_in_documented_order(environment):
    worlds.load_into_db(environment.db, FLAT)
    body = worlds.candidates(environment, 'resources=VCPU:1&limit=1')
    # Anchors in creation order: small first.
    assert _allocation_sets(body) == [[(U('small'), [('VCPU', 1)])]]
    assert list(body['provider_summaries']) == [U('small')]


def _wide_world(children, hosts=1):
    world = []
    for h in range(hosts):
        world.append({'name': 'host%d' % h, 'inventories': {'VCPU': 8}})
        for c in range(children):
            world.append({'name': 'host%d-pci%d' % (h, c),
                          'parent': 'host%d' % h,
                          'inventories': {'CUSTOM_PCI': 1}})
    return world


def _granular(count, policy='isolate'):
    return '&'.join(['resources%d=CUSTOM_PCI:1' % (i + 1)
                     for i in range(count)] + ['group_policy=' + policy])


@pytest.fixture
def sqlite_env():
    env = harness.Environment('sqlite')
    yield env
    env.close()


def test_wide_tree_counts_every_mapping(sqlite_env):
    """8 one-unit children, 3 one-unit groups: 8*7*6 distinct requests
    (they differ in mappings)."""
    worlds.load_into_db(sqlite_env.db, _wide_world(8))
    body = worlds.candidates(sqlite_env, _granular(3))
    assert len(body['allocation_requests']) == 8 * 7 * 6
    mappings = {tuple(sorted((k, tuple(v)) for k, v in r['mappings'].items()))
                for r in body['allocation_requests']}
    assert len(mappings) == 8 * 7 * 6


def _combiner(conn, query, version=(1, 39)):
    request = engine.parse_query(
        [tuple(p.split('=', 1)) for p in query.split('&')], version)
    return combine.Combiner(search.Searcher(conn, request).search(), request,
                            parents=lambda roots: {})


def test_limit_bounds_the_work(sqlite_env):
    """Taking 50 requests out of 8P6 = 20160 tries about 50 requests' worth
    of choices, not all of them."""
    worlds.load_into_db(sqlite_env.db, _wide_world(8, hosts=2))
    with sqlite_env.db.reader() as conn:
        combiner = _combiner(conn, _granular(6))
        generated = combiner.generate()
        first = [next(generated) for _ in range(50)]
    assert len(first) == 50
    assert combiner.steps < 50 * 6 * 8


def test_an_answer_without_a_bound_is_made_as_it_is_read(sqlite_env):
    """Without a bound the engine hands each candidate out as it makes it
    (engine.Streamed) and keeps none it gave; what the answer reports
    (how many, the trees, their summaries) is of every candidate read.
    (tests/test_explain.py compares its answers with the engine's that
    keeps every candidate.)"""
    worlds.load_into_db(sqlite_env.db, _wide_world(4, hosts=30))
    request = engine.parse_query([('resources', 'VCPU:1,CUSTOM_PCI:1')],
                                 (1, 39))
    before = _candidates_alive()
    with engine.find_candidates(sqlite_env.db, sqlite_env.conf,
                                request) as found:
        assert isinstance(found, engine.Streamed)
        for index, candidate in enumerate(found.allocation_requests):
            if index == 60:
                del candidate
                # The one being handed out, in the engine's generators.
                assert _candidates_alive() == before + 1
        summaries = found.provider_summaries
    assert found.count == 30 * 4
    assert found.trees == 30
    assert len(summaries) == 30 * 5


def _candidates_alive():
    return sum(isinstance(alive, combine.Candidate)
               for alive in gc.get_objects())


def test_impossible_wide_request_is_cut_early(sqlite_env):
    """Nine one-unit groups on eight one-unit children: refused per tree
    before any combination is tried."""
    worlds.load_into_db(sqlite_env.db, _wide_world(8, hosts=2))
    with sqlite_env.db.reader() as conn:
        combiner = _combiner(conn, _granular(9, 'none'))
        assert list(combiner.generate()) == []
    assert combiner.steps == 0


def _env_with(**options):
    return harness.Environment('sqlite', **{
        'placement.' + name: value for name, value in options.items()})


THREE_HOSTS = [{'name': 'host%d' % i, 'inventories': {'VCPU': 2}}
               for i in range(3)]


def _first_providers(body):
    return [list(r['allocations']) for r in body['allocation_requests']]


def test_depth_first_exhausts_each_tree():
    env = _env_with()
    try:
        worlds.load_into_db(env.db, THREE_HOSTS)
        body = worlds.candidates(
            env, 'resources_A=VCPU:1&resources_B=VCPU:1&group_policy=none')
        order = [(r['mappings']['_A'][0], r['mappings']['_B'][0])
                 for r in body['allocation_requests']]
        assert order == [(U('host%d' % i), U('host%d' % i))
                         for i in range(3)]
    finally:
        env.close()


def test_breadth_first_and_max_candidates():
    env = _env_with(allocation_candidates_generation_strategy='breadth-first',
                    max_allocation_candidates=2)
    try:
        worlds.load_into_db(env.db, THREE_HOSTS)
        body = worlds.candidates(env, 'resources=VCPU:1')
        assert _first_providers(body) == [[U('host0')], [U('host1')]]
        assert sorted(body['provider_summaries']) == sorted(
            [U('host0'), U('host1')])
        body = worlds.candidates(env, 'resources=VCPU:1&limit=1')
        assert _first_providers(body) == [[U('host0')]]
    finally:
        env.close()


def test_randomized_candidates_are_a_sample():
    env = _env_with(randomize_allocation_candidates=True)
    try:
        worlds.load_into_db(env.db, THREE_HOSTS)
        seen = set()
        for _ in range(30):
            body = worlds.candidates(env, 'resources=VCPU:1&limit=1')
            (providers,) = _first_providers(body)
            seen.add(providers[0])
        assert seen == {U('host0'), U('host1'), U('host2')}
        body = worlds.candidates(env, 'resources=VCPU:1')
        assert len(body['allocation_requests']) == 3
    finally:
        env.close()


NUMA_HOSTS = (
    [{'name': 'h%d' % h} for h in range(3)]
    + [{'name': 'h%d-n%d' % (h, n), 'parent': 'h%d' % h,
        'inventories': {'VCPU': 2, 'MEMORY_MB': 1024}}
       for h in range(3) for n in range(2)])
NAMES = {U(provider['name']): provider['name'] for provider in NUMA_HOSTS}
#: Four requests per host: VCPU from NUMA node 0 or 1, and memory from
#: node 0 or 1, in that order.
NUMA_QUERY = 'resources=VCPU:1,MEMORY_MB:256'


def _vcpu_and_memory(body):
    """Each request as (provider of VCPU, provider of MEMORY_MB), by name."""
    taken = []
    for request in body['allocation_requests']:
        by_class = {rc: NAMES[uuid]
                    for uuid, entry in request['allocations'].items()
                    for rc in entry['resources']}
        taken.append((by_class['VCPU'], by_class['MEMORY_MB']))
    return taken


def _host(h, vcpu_node, memory_node):
    return ('h%d-n%d' % (h, vcpu_node), 'h%d-n%d' % (h, memory_node))


def test_limit_takes_one_request_from_each_tree_first():
    env = _env_with()
    try:
        worlds.load_into_db(env.db, NUMA_HOSTS)
        every = [_host(h, v, m) for h in range(3) for v in range(2)
                 for m in range(2)]
        assert _vcpu_and_memory(worlds.candidates(env, NUMA_QUERY)) == every
        limited = {limit: _vcpu_and_memory(worlds.candidates(
            env, NUMA_QUERY + '&limit=%d' % limit)) for limit in (2, 3, 5, 12)}
        assert limited[2] == [_host(0, 0, 0), _host(1, 0, 0)]
        assert limited[3] == [_host(0, 0, 0), _host(1, 0, 0), _host(2, 0, 0)]
        # Fewer trees than the limit: depth-first, the first tree gives
        # its next requests, shown with its first.
        assert limited[5] == [_host(0, 0, 0), _host(0, 0, 1), _host(0, 1, 0),
                              _host(1, 0, 0), _host(2, 0, 0)]
        assert limited[12] == every
        body = worlds.candidates(env, NUMA_QUERY + '&limit=2')
        assert sorted(NAMES[uuid] for uuid in body['provider_summaries']) == [
            'h0', 'h0-n0', 'h0-n1', 'h1', 'h1-n0', 'h1-n1']
    finally:
        env.close()


UNEVEN_HOST = [
    {'name': 'u0'},
    {'name': 'u0-n0', 'parent': 'u0',
     'inventories': {'VCPU': 8, 'MEMORY_MB': 4096},
     'used': {'VCPU': 7, 'MEMORY_MB': 512}},
    {'name': 'u0-n1', 'parent': 'u0',
     'inventories': {'VCPU': 4, 'MEMORY_MB': 2048}}]
UNEVEN_NAMES = {U(provider['name']): provider['name']
                for provider in UNEVEN_HOST}


def test_a_bounded_answer_takes_from_the_roomiest_providers_first():
    """With a limit each class's choices go by free capacity, most first
    (u0-n1 has 4 VCPUs free against 1, u0-n0 3584 MB of memory against
    2048), so the tree's first request is the roomiest; without one, in
    creation order."""
    env = _env_with()
    try:
        worlds.load_into_db(env.db, UNEVEN_HOST)

        def taken(query):
            return [tuple(sorted(
                (rc, UNEVEN_NAMES[uuid])
                for uuid, entry in request['allocations'].items()
                for rc in entry['resources']))
                for request in worlds.candidates(
                    env, query)['allocation_requests']]
        unbounded = taken(NUMA_QUERY)
        assert unbounded[0] == (('MEMORY_MB', 'u0-n0'), ('VCPU', 'u0-n0'))
        assert taken(NUMA_QUERY + '&limit=1') == [
            (('MEMORY_MB', 'u0-n0'), ('VCPU', 'u0-n1'))]
        assert taken(NUMA_QUERY + '&limit=4') == [
            (('MEMORY_MB', 'u0-n0'), ('VCPU', 'u0-n1')),
            (('MEMORY_MB', 'u0-n1'), ('VCPU', 'u0-n1')),
            (('MEMORY_MB', 'u0-n0'), ('VCPU', 'u0-n0')),
            (('MEMORY_MB', 'u0-n1'), ('VCPU', 'u0-n0'))]
        assert sorted(taken(NUMA_QUERY + '&limit=4')) == sorted(unbounded)
    finally:
        env.close()


def test_breadth_first_takes_more_from_each_tree_in_turn():
    env = _env_with(allocation_candidates_generation_strategy='breadth-first')
    try:
        worlds.load_into_db(env.db, NUMA_HOSTS)
        body = worlds.candidates(env, NUMA_QUERY + '&limit=5')
        assert _vcpu_and_memory(body) == [
            _host(0, 0, 0), _host(1, 0, 0), _host(2, 0, 0), _host(0, 0, 1),
            _host(1, 0, 1)]
    finally:
        env.close()


def test_max_allocation_candidates_spreads_too():
    env = _env_with(max_allocation_candidates=2)
    try:
        worlds.load_into_db(env.db, NUMA_HOSTS)
        assert _vcpu_and_memory(worlds.candidates(env, NUMA_QUERY)) == [
            _host(0, 0, 0), _host(1, 0, 0)]
    finally:
        env.close()


def test_randomized_limit_names_distinct_trees():
    env = _env_with(randomize_allocation_candidates=True)
    try:
        worlds.load_into_db(env.db, NUMA_HOSTS)
        seen = set()
        for _ in range(20):
            taken = _vcpu_and_memory(worlds.candidates(
                env, NUMA_QUERY + '&limit=3'))
            assert sorted(vcpu[:2] for vcpu, _memory in taken) == [
                'h0', 'h1', 'h2']
            seen.update(taken)
        # Each tree's request is a random one of its four.
        assert len(seen) > 3
    finally:
        env.close()


def test_randomized_windows_start_anywhere(monkeypatch):
    """With 200 trees and tiny windows, a randomized limit=1 reads a window
    of two trees starting at a random one: across requests the trees
    chosen come from all over the cloud, and no window read is larger
    than the first."""
    env = _env_with(randomize_allocation_candidates=True)
    try:
        worlds.load_into_db(env.db, _flat_hosts(200))
        monkeypatch.setattr(windows_of, 'WINDOW_MIN', 2)
        fetched = []
        real = view.View.capacities

        def counting(*args, **kwargs):
            rows = real(*args, **kwargs)
            fetched.extend(len(found) for found in rows.values())
            return rows

        monkeypatch.setattr(view.View, 'capacities', counting)
        chosen = set()
        for _ in range(40):
            body = worlds.candidates(env, 'resources=VCPU:1&limit=1')
            (providers,) = _first_providers(body)
            chosen.add(providers[0])
        assert max(fetched) <= 2
        hosts = {U('h%d' % i): i for i in range(200)}
        assert len(chosen) > 10
        assert max(hosts[uuid] for uuid in chosen) >= 100
    finally:
        env.close()


def test_shared_amounts_are_summed_once(environment):
    """The reference sums repeated classes into shared objects; a provider
    serving two groups asking VCPU:1 each gives VCPU:2, in every request."""
    worlds.load_into_db(environment.db, [
        {'name': 'cn', 'inventories': {'VCPU': 8, 'DISK_GB': 100}},
        {'name': 'cn2', 'inventories': {'VCPU': 8, 'DISK_GB': 100}}])
    for _ in range(3):
        body = worlds.candidates(
            environment, 'resources=VCPU:1,DISK_GB:20&resources_NIC=VCPU:1'
            '&group_policy=isolate')
        assert _allocation_sets(body) == sorted(
            [[(U(name), [('DISK_GB', 20), ('VCPU', 2)])]
             for name in ('cn', 'cn2')])


def _flat_hosts(count):
    return [{'name': 'h%d' % i, 'inventories': {'VCPU': 4, 'MEMORY_MB': 512}}
            for i in range(count)]


def test_limit_searches_a_window_not_the_cloud(sqlite_env, monkeypatch):
    """With limit=5 on 200 trees, capacity rows are fetched for one window
    of trees only, and the answer is the first five trees in order."""
    worlds.load_into_db(sqlite_env.db, _flat_hosts(200))
    fetched = []
    real = view.View.capacities

    def counting(*args, **kwargs):
        rows = real(*args, **kwargs)
        fetched.append({rc: len(found) for rc, found in rows.items()})
        return rows

    monkeypatch.setattr(view.View, 'capacities', counting)
    body = worlds.candidates(sqlite_env,
                             'resources=VCPU:1,MEMORY_MB:64&limit=5')
    assert _first_providers(body) == [[U('h%d' % i)] for i in range(5)]
    assert sorted(body['provider_summaries']) == sorted(
        U('h%d' % i) for i in range(5))
    assert [sorted(rows.values()) for rows in fetched] == [
        [windows_of.WINDOW_MIN, windows_of.WINDOW_MIN]]
    fetched.clear()
    body = worlds.candidates(sqlite_env, 'resources=VCPU:1,MEMORY_MB:64')
    assert len(body['allocation_requests']) == 200
    assert [sorted(rows.values()) for rows in fetched] == [[200, 200]]


SHARED_WORLD = (
    [{'name': 'cn%d' % i, 'inventories': {'VCPU': 2},
      'aggregates': ['agg%d' % (i % 3)],
      'traits': (['CUSTOM_FAST'] if i % 2 else [])
      + (['COMPUTE_STATUS_DISABLED'] if i in (3, 4) else [])}
     for i in range(9)]
    + [{'name': 'cn%d-numa' % i, 'parent': 'cn%d' % i,
        'inventories': {'VCPU': 1, 'MEMORY_MB': 256},
        'traits': ['CUSTOM_FAST'] if i % 4 else []} for i in range(0, 9, 2)]
    + [{'name': 'disk%d' % a, 'inventories': {'DISK_GB': 100},
        'traits': ['MISC_SHARES_VIA_AGGREGATE']
        + (['CUSTOM_SSD'] if a == 1 else []), 'aggregates': ['agg%d' % a]}
       for a in range(3)])


@pytest.mark.parametrize('query', [
    'resources=VCPU:1,DISK_GB:10',
    'resources=VCPU:1&resources_S=DISK_GB:10',
    'resources_A=VCPU:1&resources_B=VCPU:1&group_policy=none',
    'resources=VCPU:2,MEMORY_MB:128',
    'resources=DISK_GB:10',
    # Traits, checked on the stocks a window read (search._Filters).
    'resources=VCPU:1&required=CUSTOM_FAST',
    'resources=VCPU:1,DISK_GB:10&required=!CUSTOM_SSD',
    'resources=VCPU:1,DISK_GB:10&required=in:CUSTOM_FAST,CUSTOM_SSD',
    'resources_A=VCPU:1&required_A=CUSTOM_FAST&resources_S=DISK_GB:10'
    '&required_S=!CUSTOM_SSD&group_policy=none',
    # A root_required that only forbids excludes roots.
    'resources=VCPU:1&root_required=!COMPUTE_STATUS_DISABLED',
    'resources=VCPU:1,DISK_GB:10&root_required=!COMPUTE_STATUS_DISABLED,'
    '!CUSTOM_FAST',
    # One that requires allows few roots: only their trees are searched.
    'resources=VCPU:1&root_required=CUSTOM_FAST',
    'resources_A=VCPU:1&resources_B=VCPU:1&group_policy=none'
    '&root_required=CUSTOM_FAST',
])
@pytest.mark.parametrize('strategy', ['depth-first', 'breadth-first'])
def test_windows_give_the_whole_cloud_answer(monkeypatch, query, strategy):
    """Searching tiny windows of trees gives, for every limit, exactly the
    requests and summaries of one window holding the whole cloud; so does
    searching only the few trees that could serve (in this small world
    MEMORY_MB, CUSTOM_FAST and the roots having it are few), in tiny
    windows or in one."""
    env = _env_with(allocation_candidates_generation_strategy=strategy)
    try:
        worlds.load_into_db(env.db, SHARED_WORLD)
        total = len(worlds.candidates(env, query)['allocation_requests'])
        assert total > 1
        for limit in range(1, total + 2):
            limited = query + '&limit=%d' % limit
            with monkeypatch.context() as every_tree:
                worlds.search_windows_of_every_tree(every_tree)
                every_tree.setattr(windows_of, 'WINDOW_MIN', 64)
                whole = worlds.candidates(env, limited)
                every_tree.setattr(windows_of, 'WINDOW_MIN', 1)
                assert worlds.candidates(env, limited) == whole
            for window_min in (1, 64):
                monkeypatch.setattr(windows_of, 'WINDOW_MIN', window_min)
                assert worlds.candidates(env, limited) == whole
    finally:
        env.close()


FEW_TRAITED = (
    [{'name': 'h%d' % i, 'inventories': {'VCPU': 4},
      'aggregates': ['a'] if i == 3 else []} for i in range(40)]
    + [{'name': 'h%d-pf' % i, 'parent': 'h%d' % i,
        'inventories': {'SRIOV_NET_VF': 4},
        'traits': {7: ['CUSTOM_WIDE'], 31: ['CUSTOM_WIDE'],
                   0: ['CUSTOM_LONE']}.get(i, [])}
       for i in range(40)]
    + [{'name': 'h%d-gpu' % i, 'parent': 'h%d' % i,
        'inventories': {'VGPU': 1}} for i in (3, 31)]
    + [{'name': 'pool', 'inventories': {'DISK_GB': 100},
        'traits': ['MISC_SHARES_VIA_AGGREGATE'], 'aggregates': ['a']}])


@pytest.mark.parametrize('query, searched, chosen', [
    # A trait only two trees have: only they are searched.
    ('resources=VCPU:1&resources1=SRIOV_NET_VF:1&required1=CUSTOM_WIDE'
     '&group_policy=none', {'h7', 'h31'},
     [{'h7', 'h7-pf'}, {'h31', 'h31-pf'}]),
    # A class only two trees have, and the trait: the one tree with both.
    ('resources=VCPU:1,VGPU:1&resources1=SRIOV_NET_VF:1'
     '&required1=CUSTOM_WIDE&group_policy=none', {'h31'},
     [{'h31', 'h31-gpu', 'h31-pf'}]),
    # Searched, the tree of both still fails the group: one provider must
    # have the trait and the class.
    ('resources1=VGPU:1&required1=CUSTOM_WIDE', {'h31'}, []),
    # No tree has both: nothing is read.
    ('resources=VGPU:1&resources1=SRIOV_NET_VF:1&required1=CUSTOM_LONE'
     '&group_policy=none', set(), []),
    # A class a sharing provider holds serves trees by aggregate: it
    # narrows nothing, VGPU does; the pool is read for the tree it serves.
    ('resources=VCPU:1,DISK_GB:10,VGPU:1', {'h3', 'h31'},
     [{'h3', 'h3-gpu', 'pool'}]),
])
def test_few_holders_narrow_the_search_to_their_trees(
        monkeypatch, query, searched, chosen):
    """With a limit, when a class or trait asked for is held by few
    providers (here every one is), only their trees are searched, and the
    answer is the one searching every tree gives."""
    env = _env_with()
    try:
        ids = worlds.load_into_db(env.db, FEW_TRAITED)
        windows = worlds.record_windows(monkeypatch)
        limited = query + '&limit=5'
        body = worlds.candidates(env, limited)
        assert all(window.roots is not None for window in windows)
        assert set().union(*(window.roots for window in windows)) == {
            ids[name] for name in searched}
        assert [set(r['allocations']) for r in body['allocation_requests']
                ] == [{worlds.uuid_of(name) for name in names}
                      for names in chosen]
        with monkeypatch.context() as every_tree:
            worlds.search_windows_of_every_tree(every_tree)
            assert worlds.candidates(env, limited) == body
    finally:
        env.close()


TENANTS = (
    [{'name': 't%d' % i, 'inventories': {'VCPU': 4},
      'aggregates': {2: ['one'], 5: ['two', 'pooled'], 6: ['two']}.get(
          i, [])} for i in range(20)]
    + [{'name': 't%d-numa' % i, 'parent': 't%d' % i,
        'inventories': {'MEMORY_MB': 1024},
        'aggregates': ['child'] if i == 9 else []} for i in range(20)]
    + [{'name': 'pool', 'inventories': {'DISK_GB': 100},
        'traits': ['MISC_SHARES_VIA_AGGREGATE'], 'aggregates': ['pooled']}])


@pytest.mark.parametrize('query, searched, chosen', [
    # The root in the aggregate: its whole tree.
    ('resources=VCPU:1,MEMORY_MB:64&member_of=%s' % U('one'), {'t2'},
     [{'t2', 't2-numa'}]),
    ('resources=VCPU:1,MEMORY_MB:64&member_of=in:%s,%s'
     % (U('one'), U('two')), {'t2', 't5', 't6'},
     [{'t2', 't2-numa'}, {'t5', 't5-numa'}, {'t6', 't6-numa'}]),
    # A suffixed group's provider in the aggregate: the tree it is in.
    ('resources=VCPU:1&resources1=MEMORY_MB:64&member_of1=%s' % U('child'),
     {'t9'}, [{'t9', 't9-numa'}]),
    # A sharing provider in the aggregate serves other trees too: every
    # tree is searched.
    ('resources=VCPU:1,DISK_GB:10&member_of=%s' % U('pooled'), None,
     [{'t5', 'pool'}]),
    # No provider in the aggregate: nothing is searched.
    ('resources=VCPU:1&member_of=%s' % U('nowhere'), set(), []),
])
def test_member_of_narrows_a_search_without_limit_to_its_trees(
        environment, monkeypatch, query, searched, chosen):
    """Without a limit, when few providers are in the aggregates a group
    must be in (none of them sharing its inventory), only their trees are
    searched, in one window, and the answer is the one searching every
    tree gives."""
    ids = worlds.load_into_db(environment.db, TENANTS)
    windows = worlds.record_windows(monkeypatch)
    body = worlds.candidates(environment, query)
    if searched is None:
        assert set(windows) == {None}
    else:
        assert {window.roots for window in windows} <= {frozenset(
            ids[name] for name in searched)}
    assert [set(r['allocations']) for r in body['allocation_requests']] == [
        {U(name) for name in names} for names in chosen]
    with monkeypatch.context() as every_tree:
        worlds.search_windows_of_every_tree(every_tree)
        assert worlds.candidates(environment, query) == body


HALF_FULL = [{'name': 'hf%03d' % i, 'inventories': {'VCPU': 2},
              'used': {'VCPU': 2} if i % 2 else {}} for i in range(200)]


def test_a_first_window_is_sized_by_the_last_search_of_its_request(
        monkeypatch):
    """The first window holds twice ``limit`` trees; the next request of
    the same shape, enough for ``limit`` trees at the rate the last one
    found them (here one tree in two), with WINDOW_MARGIN. The answer is
    the same."""
    env = _env_with()
    try:
        worlds.load_into_db(env.db, HALF_FULL)
        worlds.search_windows_of_every_tree(monkeypatch)
        monkeypatch.setattr(windows_of, 'WINDOW_MIN', 1)
        windows = worlds.record_windows(monkeypatch)
        first = worlds.candidates(env, 'resources=VCPU:1&limit=10')
        assert [window.trees for window in windows] == [20]
        del windows[:]
        assert worlds.candidates(env, 'resources=VCPU:1&limit=10') == first
        assert [window.trees for window in windows] == [25]
        del windows[:]
        worlds.candidates(env, 'resources=VCPU:2&limit=10')
        assert [window.trees for window in windows] == [20]
        assert [list(r['allocations']) for r in first['allocation_requests']
                ] == [[worlds.uuid_of('hf%03d' % i)] for i in range(0, 20, 2)]
    finally:
        env.close()


@pytest.mark.mysql
def test_holders_are_read_with_their_roots_when_few(environment,
                                                    monkeypatch):
    """View.holders_if_few gives each holder's root, of a class or of any
    of some traits, on every backend (PostgreSQL reads them another way);
    None when more hold it than ``most`` or FEW_HOLDERS."""
    ids = worlds.load_into_db(environment.db, FEW_TRAITED)
    monkeypatch.setattr(view, 'FEW_HOLDERS', 30)
    names = {provider_id: name for name, provider_id in ids.items()}
    with environment.db.replica_reader() as conn:
        request_view = cloud.request_view(conn, ['VGPU', 'VCPU'],
                                  ['CUSTOM_WIDE', 'CUSTOM_LONE'])
        known = request_view.known
        rc_ids = {name: rc_id for rc_id, name in known.class_names.items()}

        def holders(**kwargs):
            found = request_view.holders_if_few(**kwargs)
            return found if found is None else {
                names[holder]: names[root] for holder, root in found.items()}

        assert holders(rc_id=rc_ids['VGPU']) == {'h3-gpu': 'h3',
                                                 'h31-gpu': 'h31'}
        assert holders(rc_id=rc_ids['VGPU'], most=1) is None
        assert holders(trait_ids=set(known.trait_ids.values())) == {
            'h0-pf': 'h0', 'h7-pf': 'h7', 'h31-pf': 'h31'}
        assert holders(rc_id=rc_ids['VCPU']) is None


def test_a_widely_held_class_is_not_read_again(monkeypatch):
    """A class held by more than FEW_HOLDERS providers narrows nothing,
    and its holders are not read again for RECHECK_WIDELY_HELD_AFTER
    seconds; the few holders of another are read on every request. The
    answer is the same whatever was read."""
    env = _env_with()
    try:
        worlds.load_into_db(env.db, FEW_TRAITED)
        monkeypatch.setattr(view, 'FEW_HOLDERS', 30)
        holders_read = []
        real_query = db_candidates._holders_query

        def holders_query(holder_ids, postgresql):
            holders_read.append(holder_ids)
            return real_query(holder_ids, postgresql)

        monkeypatch.setattr(db_candidates, '_holders_query', holders_query)

        query = 'resources=VCPU:1,VGPU:1&limit=5'
        first = worlds.candidates(env, query)
        assert [set(r['allocations']) for r in first['allocation_requests']
                ] == [{worlds.uuid_of('h%d' % i), worlds.uuid_of(
                    'h%d-gpu' % i)} for i in (3, 31)]
        assert len(holders_read) == 2
        holders_read.clear()
        assert worlds.candidates(env, query) == first
        assert len(holders_read) == 1
        later = time.monotonic() + view.RECHECK_WIDELY_HELD_AFTER
        monkeypatch.setattr(view, 'time', types.SimpleNamespace(
            monotonic=lambda: later))
        holders_read.clear()
        assert worlds.candidates(env, query) == first
        assert len(holders_read) == 2
    finally:
        env.close()


def test_holders_found_more_than_wanted_are_not_read_again(monkeypatch):
    """Once trees are narrowed, a trait held by more providers than are
    worth reading to narrow them further is read once; later requests
    asking as little of it do not read it again, and the answer is the
    same."""
    env = _env_with()
    try:
        ids = worlds.load_into_db(env.db, FEW_TRAITED)
        monkeypatch.setattr(view, 'FEW_HOLDERS', 30)
        monkeypatch.setattr(view, 'CHEAP_HOLDERS', 1)
        read = []
        real_holders = view.View.holders_if_few

        def holders_if_few(self, rc_id=None, trait_ids=(), most=None):
            found = real_holders(self, rc_id, trait_ids, most)
            read.append((rc_id, tuple(trait_ids), found))
            return found

        real_query = db_candidates._holders_query
        queried = []

        def holders_query(holder_ids, postgresql):
            queried.append(holder_ids)
            return real_query(holder_ids, postgresql)

        monkeypatch.setattr(view.View, 'holders_if_few', holders_if_few)
        monkeypatch.setattr(db_candidates, '_holders_query', holders_query)
        query = ('resources=VCPU:1,VGPU:1&resources1=SRIOV_NET_VF:1'
                 '&required1=CUSTOM_WIDE&group_policy=none&limit=5')
        first = worlds.candidates(env, query)
        assert [set(r['allocations']) for r in first['allocation_requests']
                ] == [{worlds.uuid_of(name)
                       for name in ('h31', 'h31-gpu', 'h31-pf')}]
        # VCPU and SRIOV_NET_VF: held by all 40 trees; VGPU: by h3 and h31;
        # CUSTOM_WIDE: by two providers, more than the one worth reading.
        assert [found if found is None else set(found.values())
                for _rc, _traits, found in read] == [
                    None, {ids['h3'], ids['h31']}, None, None]
        assert len(queried) == 4
        queried.clear()
        assert worlds.candidates(env, query) == first
        assert len(queried) == 1
    finally:
        env.close()


@pytest.mark.parametrize('query', [
    # More than the largest max_unit (big's DISK_GB: 500) ...
    'resources=DISK_GB:501',
    # ... more than any capacity (big's VCPU: 32) ...
    'resources=VCPU:33&limit=5',
    # ... a class nobody has, in the first of two groups.
    'resources_G=VGPU:1&resources=VCPU:1',
])
def test_what_no_provider_could_give_reads_no_capacities(
        environment, monkeypatch, query):
    """Asked more than any provider could give even if nothing were used,
    the engine answers at once, without reading what providers have."""
    worlds.load_into_db(environment.db, FLAT)
    read = []
    real = view.View.capacities

    def recording(*args, **kwargs):
        read.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(view.View, 'capacities', recording)
    body = worlds.candidates(environment, query)
    assert (body, read) == (
        {'allocation_requests': [], 'provider_summaries': {}}, [])


def test_a_group_no_provider_could_give_hides_later_unknown_names(
        environment):
    """As in the reference, groups after one that nothing can serve are not
    looked at: their unknown names are not reported."""
    worlds.load_into_db(environment.db, FLAT)
    body = worlds.candidates(environment,
                             'resources=DISK_GB:501&resources_X=CUSTOM_NOPE:1')
    assert body == {'allocation_requests': [], 'provider_summaries': {}}
    status, _headers, body = environment.request(
        'GET', '/allocation_candidates?resources=DISK_GB:1'
        '&resources_X=CUSTOM_NOPE:1', version='1.39')
    assert status == 400
    assert 'No such resource class CUSTOM_NOPE' in body['errors'][0]['detail']


#: VCPU only in the first tree, MEMORY_MB only in the fourth.
TREES_APART = [
    {'name': 'one', 'inventories': {'VCPU': 2}},
    {'name': 'empty1'}, {'name': 'empty2'},
    {'name': 'two', 'inventories': {'MEMORY_MB': 512}}]


def test_windows_report_unknown_names_like_the_whole_cloud(monkeypatch):
    """Group 1 matches only tree one, group 2 only tree two, and no window
    (two trees, then four) holds both; yet the unknown class of group 3 is
    reported, as the whole-cloud search reports it."""
    env = _env_with()
    try:
        worlds.load_into_db(env.db, TREES_APART)
        monkeypatch.setattr(windows_of, 'WINDOW_MIN', 1)
        query = ('resources_A=VCPU:1&resources_B=MEMORY_MB:64'
                 '&resources_C=CUSTOM_NOPE:1&group_policy=none')
        for suffix in ('', '&limit=1'):
            status, _h, body = env.request(
                'GET', '/allocation_candidates?' + query + suffix,
                version='1.39')
            assert status == 400
            assert 'No such resource class CUSTOM_NOPE' in (
                body['errors'][0]['detail'])
        body = worlds.candidates(
            env, 'resources_A=VCPU:1&resources_B=MEMORY_MB:64'
            '&group_policy=none&limit=1')
        assert body['allocation_requests'] == []
    finally:
        env.close()


def test_windows_read_the_cloud_only_to_tell_a_later_unknown_name(
        monkeypatch):
    """When no window serves every group, the whole cloud is read for a
    group only if a later group names something unknown: the whole-cloud
    search would report it unless that group cannot be served anywhere."""
    env = _env_with()
    try:
        worlds.load_into_db(env.db, TREES_APART)
        monkeypatch.setattr(windows_of, 'WINDOW_MIN', 1)
        worlds.search_windows_of_every_tree(monkeypatch)
        windows = worlds.record_windows(monkeypatch)
        body = worlds.candidates(
            env, 'resources_A=VCPU:1&resources_B=MEMORY_MB:64'
            '&group_policy=none&limit=1')
        assert body['allocation_requests'] == []
        assert windows and None not in windows
        # Group B has no provider with the trait anywhere: group C is not
        # looked at, as in the reference, so its unknown class is not
        # reported.
        body = worlds.candidates(
            env, 'resources_A=VCPU:1&resources_B=MEMORY_MB:64'
            '&required_B=HW_CPU_X86_AVX2&resources_C=CUSTOM_NOPE:1'
            '&group_policy=none&limit=1')
        assert body == {'allocation_requests': [], 'provider_summaries': {}}
    finally:
        env.close()


TRAITED_WORLD = (
    [{'name': 'tw%d' % i, 'inventories': {'VCPU': 2, 'DISK_GB': 50},
      'traits': ['CUSTOM_SLOW'] if i == 3 else [],
      'aggregates': ['tagg%d' % (i % 2)]} for i in range(6)]
    + [{'name': 'tw%d-numa%d' % (i, n), 'parent': 'tw%d' % i,
        'inventories': {'VCPU': 2, 'MEMORY_MB': 512},
        'traits': ['CUSTOM_FAST'] if n else ['HW_CPU_X86_AVX2']}
       for i in range(0, 6, 2) for n in range(2)]
    + [{'name': 'tdisk%d' % a, 'inventories': {'DISK_GB': 100},
        'traits': ['MISC_SHARES_VIA_AGGREGATE'], 'aggregates': ['tagg%d' % a]}
       for a in range(2)])


@pytest.mark.parametrize('query', [
    'resources=VCPU:1,DISK_GB:10',
    'resources=VCPU:1,MEMORY_MB:128,DISK_GB:10',
    'resources=VCPU:1,MEMORY_MB:128&required=CUSTOM_FAST',
    'resources=VCPU:1,DISK_GB:10&required=in:CUSTOM_FAST,HW_CPU_X86_AVX2'
    '&required=!CUSTOM_SLOW',
])
def test_lone_unsuffixed_group_shortcut_equals_the_walk(monkeypatch, query):
    """A request of the unsuffixed group alone skips the walk (its requests
    are the product of each class's choices); it answers exactly what the
    walk answers: the same requests, in the same order, and summaries."""
    env = _env_with()
    try:
        worlds.load_into_db(env.db, TRAITED_WORLD)
        shortcut = worlds.candidates(env, query)
        real_init = combine.Combiner.__init__

        def always_walk(self, *args, **kwargs):
            real_init(self, *args, **kwargs)
            self._lone_spread_group = False

        monkeypatch.setattr(combine.Combiner, '__init__', always_walk)
        walked = worlds.candidates(env, query)
        assert len(shortcut['allocation_requests']) > 1
        assert shortcut == walked
    finally:
        env.close()


#: Hosts with two NUMA nodes, each with a PF of VFs; the first PFs on the
#: physnet.
SRIOV_WORLD = [provider for h in range(6) for provider in (
    [{'name': 'h%d' % h, 'inventories': {'VCPU': 8, 'MEMORY_MB': 4096}}]
    + [{'name': 'h%d-numa%d' % (h, n), 'parent': 'h%d' % h,
        'inventories': {'VCPU': 4}} for n in range(2)]
    + [{'name': 'h%d-pf%d' % (h, n), 'parent': 'h%d-numa%d' % (h, n),
        'inventories': {'SRIOV_NET_VF': 4},
        'traits': ['CUSTOM_PHYSNET_NET0'] if n == 0 else []}
       for n in range(2)])]


@pytest.mark.parametrize('query', [
    'resources=MEMORY_MB:512&resources1=SRIOV_NET_VF:1'
    '&required1=CUSTOM_PHYSNET_NET0&resources2=SRIOV_NET_VF:1'
    '&group_policy=isolate',
    'resources_A=VCPU:1&resources_B=SRIOV_NET_VF:1&same_subtree=_A,_B'
    '&group_policy=none',
    'resources=VCPU:2,SRIOV_NET_VF:2&resources1=MEMORY_MB:512'
    '&group_policy=none',
    'resources=VCPU:2,SRIOV_NET_VF:2&resources1=MEMORY_MB:512'
    '&group_policy=none&limit=4',
])
def test_caches_emptied_as_they_fill_change_no_answer(sqlite_env,
                                                      monkeypatch, query):
    """The walk's caches by provider and the renderer's quoted uuids are
    emptied once full (combine.KEPT_PER_PROVIDER, RENDERED_KEPT): with
    room for one entry each, the answer is the one of room for all."""
    worlds.load_into_db(sqlite_env.db, SRIOV_WORLD)
    whole = worlds.candidates(sqlite_env, query)
    assert len(whole['allocation_requests']) > 3
    emptied = []
    room_in = combine._room_in

    def counting(cache):
        emptied.append(len(cache) >= combine.KEPT_PER_PROVIDER)
        return room_in(cache)

    monkeypatch.setattr(combine, 'KEPT_PER_PROVIDER', 1)
    monkeypatch.setattr(combine, '_room_in', counting)
    monkeypatch.setattr(candidates_answer, 'RENDERED_KEPT', 1)
    assert worlds.candidates(sqlite_env, query) == whole
    assert any(emptied)
