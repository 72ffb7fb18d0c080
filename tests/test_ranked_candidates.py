"""Ranked allocation candidates (1.42, engine/ranked.py): the bounded,
best-first search gives exactly the brute-force answer (every candidate of
every tree, sorted by the documented key, cut at ``limit``) on random
worlds, on each database; the work is bounded; bad ranking parameters are
400s."""

import collections
import dataclasses
from unittest import mock

import pytest
from hypothesis import HealthCheck
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from placement_lite import engine
from placement_lite import errors
from placement_lite import microversion
from placement_lite.db import cloud
from placement_lite.db.cloud import keys
from placement_lite.db.cloud import orders
from placement_lite.engine import combine
from placement_lite.engine import dispersion
from placement_lite.engine import rank_query
from placement_lite.engine import search
from placement_lite.engine import windows
from tests import candidate_worlds as worlds
from tests import checked_share
from tests import harness

RANKED = (1, 42)
#: A microversion before candidates knew trees (1.29).
TREE_UNAWARE = microversion.Version(1, 28)
TRAITS = ('CUSTOM_A', 'CUSTOM_B', 'CUSTOM_C')
SHARES = 'MISC_SHARES_VIA_AGGREGATE'
#: The least share of the generated examples a property test of ranked
#: candidates or claims must check (the others are queries refused with a
#: 400, given up on): the generators gave 93 to 100% in three runs of
#: each test on SQLite.
LEAST_CHECKED = 0.8


def _inventory(draw, total_range):
    total = draw(st.integers(*total_range))
    inventory = {'total': total}
    if draw(st.integers(0, 3)) == 0:
        inventory['reserved'] = draw(st.integers(0, total))
    if draw(st.integers(0, 3)) == 0:
        inventory['allocation_ratio'] = 1.5
    return inventory


def _capacity(inventory):
    return int((inventory['total'] - inventory.get('reserved', 0))
               * inventory.get('allocation_ratio', 1.0))


TOTALS = {'VCPU': (1, 8), 'MEMORY_MB': (1, 8), 'DISK_GB': (1, 8),
          'CUSTOM_GPU': (1, 2)}


def _provider(draw, name, parent, classes):
    inventories = {}
    for rc in classes:
        if draw(st.integers(0, 3)):
            inventories[rc] = _inventory(draw, TOTALS[rc])
    used = {}
    for rc, inventory in inventories.items():
        amount = draw(st.integers(0, _capacity(inventory))) if draw(
            st.booleans()) else 0
        if amount:
            used[rc] = amount
    provider = {'name': name, 'parent': parent, 'inventories': inventories,
                'traits': draw(st.lists(st.sampled_from(TRAITS),
                                        unique=True, max_size=2)),
                'used': used}
    return provider


@st.composite
def random_worlds(draw):
    """A few trees (a root, up to three children, a grandchild), maybe a
    sharing DISK_GB provider in an aggregate with some roots."""
    world = []
    sharing = draw(st.booleans())
    for t in range(draw(st.integers(1, 7))):
        root = _provider(draw, 'r%d' % t, None,
                         ('VCPU', 'MEMORY_MB', 'DISK_GB'))
        if sharing and draw(st.booleans()):
            root['aggregates'] = ['agg']
        world.append(root)
        for c in range(draw(st.integers(0, 3))):
            world.append(_provider(draw, 'r%d-c%d' % (t, c), 'r%d' % t,
                                   ('VCPU', 'MEMORY_MB', 'CUSTOM_GPU')))
        if draw(st.integers(0, 3)) == 0:
            world.append(_provider(draw, 'r%d-c0-g' % t, 'r%d-c0' % t,
                                   ('CUSTOM_GPU',))
                         if any(p['name'] == 'r%d-c0' % t for p in world)
                         else _provider(draw, 'r%d-x' % t, 'r%d' % t,
                                        ('CUSTOM_GPU',)))
    # Every trait exists (a preferred trait that does not is a 400).
    world.append({'name': 'traits', 'traits': list(TRAITS),
                  'inventories': {}, 'used': {}})
    if sharing:
        world.append({'name': 'share', 'aggregates': ['agg'],
                      'traits': [SHARES, 'CUSTOM_A'],
                      'inventories': {'DISK_GB': _inventory(draw, (4, 12))},
                      'used': {}})
    return world


@st.composite
def ranked_queries(draw):
    """A ranked query: some groups, maybe alternatives, rank_by terms,
    preferred traits, maybe a limit."""
    pairs = []
    unsuffixed = draw(st.lists(st.sampled_from(
        ['VCPU:1', 'VCPU:2', 'MEMORY_MB:1', 'MEMORY_MB:3', 'DISK_GB:1',
         'DISK_GB:3']),
        unique_by=lambda part: part.split(':')[0], max_size=3))
    if unsuffixed:
        pairs.append(('resources', ','.join(unsuffixed)))
    suffixed = draw(st.sampled_from(['', 'A', 'AB']))
    if 'A' in suffixed:
        pairs.append(('resources_A', draw(st.sampled_from(
            ['CUSTOM_GPU:1', 'VCPU:3', 'MEMORY_MB:2']))))
    if 'B' in suffixed:
        pairs.append(('resources_B', draw(st.sampled_from(
            ['VCPU:1', 'MEMORY_MB:4', 'DISK_GB:1']))))
        pairs.append(('group_policy', draw(st.sampled_from(
            ['none', 'isolate']))))
        if draw(st.booleans()):
            pairs.append(('alternatives', '_A,_B'))
    if not pairs:
        pairs.append(('resources', 'VCPU:1'))
    terms = draw(st.lists(st.sampled_from(
        ['VCPU', 'MEMORY_MB', 'DISK_GB']), unique=True, max_size=2))
    if terms:
        pairs.append(('rank_by', ','.join(
            '%s:%s' % (draw(st.sampled_from(['spread', 'pack'])), rc)
            for rc in terms)))
    suffixes = [''] * bool(unsuffixed) + ['_' + s for s in suffixed]
    for suffix in draw(st.lists(st.sampled_from(suffixes), unique=True)) if (
            suffixes) else ():
        pairs.append(('preferred' + suffix, ','.join(draw(st.lists(
            st.sampled_from(TRAITS), unique=True, min_size=1)))))
    if draw(st.booleans()) or not any(
            name in ('rank_by', 'alternatives') or name.startswith(
                'preferred') for name, _value in pairs):
        pairs.append(('root_preferred', draw(st.sampled_from(TRAITS))))
    limit = draw(st.one_of(st.none(), st.integers(1, 4)))
    return pairs, limit


def _trees(world):
    """{provider name: root name}."""
    parents = {p['name']: p.get('parent') for p in world}
    roots = {}
    for name in parents:
        root = name
        while parents[root]:
            root = parents[root]
        roots[name] = root
    return roots


def _oracle(env, world, ids, pairs, limit, nested_aware=True,
            roomiest_first=False, best_trees_left_out=0):
    """The brute-force answer: every candidate of every tree under the
    first alternatives that give the tree one, keyed from the world's own
    numbers, sorted, sharing-only duplicates kept at their best key, cut
    at ``limit``. [(allocations by name, mappings by name, key)]. Not
    ``nested_aware`` (before 1.29): no candidate takes a class from two
    providers; ``roomiest_first``: each tree's candidates generated
    roomiest choices first (combine.Combiner); ``best_trees_left_out``:
    every candidate of that many trees is left out, the trees whose best
    candidates rank first (modulo the trees with a candidate, when they
    are not more)."""
    names = {id_: name for name, id_ in ids.items()}
    by_name = {p['name']: p for p in world}
    root_of = _trees(world)
    request = engine.parse_query(pairs, RANKED)
    if not nested_aware:
        request = dataclasses.replace(request, version=TREE_UNAWARE)
    rank_by = request.ranking
    tree_free = collections.defaultdict(int)
    for p in world:
        for rc, inventory in p['inventories'].items():
            tree_free[root_of[p['name']], rc] += (
                _capacity(inventory) - p['used'].get(rc, 0))
    every = collections.defaultdict(list)
    with env.db.reader() as conn:
        for alternative in rank_query.alternative_requests(request):
            searcher = search.Searcher(conn, alternative.request)
            try:
                result = searcher.search()
            except search.NoCandidates:
                continue
            combiner = combine.Combiner(result, alternative.request,
                                        parents=searcher.view.parents,
                                        roomiest_first=roomiest_first)
            for anchor in result.anchors:
                if anchor not in every:
                    found = list(combiner.for_anchor(anchor, every=True))
                    if found:
                        every[anchor] = (alternative, found)
    keyed = []
    for anchor, (alternative, found) in every.items():
        tree = names[anchor]
        partial = []
        for index, candidate in enumerate(found):
            allocations = {names[p]: dict(r)
                           for p, r in candidate.allocations.items()}
            mappings = {s: sorted(names[p] for p in ps)
                        for s, ps in candidate.mappings.items()}
            preferred = len(rank_by.root_preferred
                            & set(by_name[tree]['traits']))
            for suffix, providers in mappings.items():
                offered = set().union(*(by_name[p]['traits']
                                        for p in providers))
                preferred += len(rank_by.preferred.get(suffix, set())
                                 & offered)
            terms = []
            for order in rank_by.orders:
                taken = sum(r.get(order.resource_class, 0)
                            for p, r in allocations.items()
                            if root_of[p] == tree)
                free = tree_free[tree, order.resource_class] - taken
                terms.append(-free if order.direction == 'spread' else free)
            partial.append((preferred, terms, index, allocations, mappings))
        rounds = {}
        for preferred, terms, index, allocations, mappings in partial:
            rounds[index] = sum(
                1 for other in partial
                if other[0] == preferred and (other[1], other[2])
                < (terms, index))
        for preferred, terms, index, allocations, mappings in partial:
            key = (*alternative.rank, -preferred, rounds[index], *terms,
                   anchor, index)
            shared = all(SHARES in by_name[p]['traits'] for p in allocations)
            keyed.append((key, allocations, mappings, shared))
    best = {}
    for key, allocations, mappings, shared in sorted(
            keyed, key=lambda item: item[0]):
        identity = repr((sorted(allocations.items()),
                         sorted(mappings.items()))) if shared else key
        best.setdefault(identity, (key, allocations, mappings))
    answer = sorted(best.values(), key=lambda item: item[0])
    best_of_tree = {}
    for key, *_rest in keyed:
        best_of_tree[key[-2]] = min(key, best_of_tree.get(key[-2], key))
    trees = sorted(best_of_tree, key=best_of_tree.get)
    if trees and len(trees) <= best_trees_left_out:
        best_trees_left_out %= len(trees)
    left_out = set(trees[:best_trees_left_out])
    answer = [item for item in answer if item[0][-2] not in left_out]
    return answer if limit is None else answer[:limit]


def _ranked(env, ids, pairs, limit):
    """What the engine answers: [(allocations by name, mappings by name)]
    and the explain ranking's candidates."""
    names = {id_: name for name, id_ in ids.items()}
    request = engine.parse_query(
        pairs + ([('limit', str(limit))] if limit else []), RANKED)
    request = dataclasses.replace(request, explain=True)
    with engine.find_candidates(env.db, env.conf, request) as found:
        answer = [({names[p]: dict(r) for p, r in c.allocations.items()},
                   {s: sorted(names[p] for p in ps)
                    for s, ps in c.mappings.items()})
                  for c in found.allocation_requests]
    return answer, found.explanation.ranking


def _explained_key(key, rank_by):
    """An oracle key as explain shows it: (preferred, round, free, index)."""
    sets = len(rank_by.alternatives)
    terms = key[sets + 2:sets + 2 + len(rank_by.orders)]
    return (-key[sets], key[sets + 1],
            {order.resource_class: (-term if order.direction == 'spread'
                                    else term)
             for order, term in zip(rank_by.orders, terms)}, key[-1])


def _check_world(backend, world, pairs, limit, narrow=False):
    """The engine's answer and explained keys are the oracle's; with
    ``narrow`` windows (the first of one tree, each next twice as many),
    so that the bounded walk takes trees window by window, stream by
    stream, and stops before the last. False when the query is refused
    (BadRequest) and nothing was checked."""
    env = harness.Environment(backend)
    try:
        ids = worlds.load_into_db(env.db, world)
        try:
            expected = _oracle(env, world, ids, pairs, limit)
        except errors.BadRequest:
            return False
        size = windows.FirstWindow.size
        with mock.patch.object(windows.FirstWindow, 'size', (
                lambda _first, _bound: 1) if narrow else size):
            answer, explained = _ranked(env, ids, pairs, limit)
        assert answer == [(a, m) for _key, a, m in expected]
        rank_by = engine.parse_query(pairs, RANKED).ranking
        assert [(k.preferred, k.round, k.free, k.index)
                for k in explained.candidates] == [
            _explained_key(key, rank_by) for key, _a, _m in expected]
        return True
    finally:
        env.close()


@pytest.mark.slow
def test_bounded_ranking_equals_brute_force(backend):
    share = checked_share.CheckedShare(LEAST_CHECKED)

    @settings(max_examples=80, deadline=None,
              suppress_health_check=[HealthCheck.too_slow,
                                     HealthCheck.data_too_large])
    @given(world=random_worlds(), query=ranked_queries(),
           narrow=st.booleans())
    def check(world, query, narrow):
        share.example()
        pairs, limit = query
        if not _check_world(backend, world, pairs, limit, narrow):
            share.give_up()

    check()
    share.assert_enough()


@st.composite
def server_orders(draw):
    """``[placement] allocation_candidates_rank_by`` and
    ``allocation_candidates_dispersion`` settings, and a microversion."""
    terms = draw(st.lists(st.sampled_from(['VCPU', 'MEMORY_MB', 'DISK_GB']),
                          unique=True, min_size=1, max_size=2))
    rank_by = ','.join('%s:%s' % (draw(st.sampled_from(['spread', 'pack'])),
                                  rc) for rc in terms)
    return (rank_by, draw(st.integers(0, 3)), draw(st.integers(0, 99)),
            draw(st.sampled_from([(1, 36), (1, 28)])))


def _unranked(pairs):
    """``pairs`` without the ranking parameters."""
    return [(name, value) for name, value in pairs
            if name not in ('rank_by', 'root_preferred', 'alternatives')
            and not rank_query.PREFERRED.match(name)]


@pytest.mark.slow
def test_server_order_equals_brute_force(backend):
    """A request ranking nothing, with the server's order set, gets the
    brute-force answer of that order; with dispersion, without every
    candidate of as many of the best trees as the offset its shape had its
    turn at, which is at most the dispersion: its first candidate is the
    best of one of the best dispersion + 1 trees. (Where a sharing
    provider holds a class of the key, nothing is left out.) Each tree's
    candidates come roomiest choices first, as a bounded request's.
    Before 1.29 as well, without nested candidates."""
    share = checked_share.CheckedShare(LEAST_CHECKED)

    @settings(max_examples=60, deadline=None,
              suppress_health_check=[HealthCheck.too_slow,
                                     HealthCheck.data_too_large])
    @given(world=random_worlds(), query=ranked_queries(),
           order=server_orders())
    def check(world, query, order):
        share.example()
        if not _check_server_order(backend, world, query, order):
            share.give_up()

    check()
    share.assert_enough()


def _check_server_order(backend, world, query, order):
    """test_server_order_equals_brute_force's check of one example; False
    when the query is refused (BadRequest) and nothing was checked."""
    pairs, limit = query
    rank_by, most, seed, version = order
    nested_aware = version >= (1, 29)
    # Named suffixes came with 1.33.
    pairs = [pair for pair in _unranked(pairs)
             if nested_aware or pair[0] == 'resources'] or [
        ('resources', 'VCPU:1')]
    limit = limit or 2
    shared_key = any(SHARES in p['traits'] and rc in rank_by
                     for p in world for rc in p['inventories'])
    env = harness.Environment(backend, **{
        'placement.allocation_candidates_rank_by': rank_by,
        'placement.allocation_candidates_dispersion': most,
        'placement.allocation_candidates_dispersion_seed': seed})
    offsets = []
    real = dispersion.next_offset

    def recorded(*args, **kwargs):
        offsets.append(real(*args, **kwargs))
        return offsets[-1]

    try:
        ids = worlds.load_into_db(env.db, world)
        names = {id_: name for name, id_ in ids.items()}
        request = engine.parse_query(pairs + [('limit', str(limit))], version)
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(dispersion, 'next_offset', recorded)
            for _request in range(3):
                try:
                    with engine.find_candidates(
                            env.db, env.conf, request) as found:
                        chosen = list(found.allocation_requests)
                except errors.BadRequest:
                    return False
                left_out = offsets[-1] if most and not shared_key else 0
                assert left_out <= most
                expected = _oracle(
                    env, world, ids, pairs + [('rank_by', rank_by)], limit,
                    nested_aware, roomiest_first=nested_aware,
                    best_trees_left_out=left_out)
                assert [({names[p]: dict(r)
                          for p, r in c.allocations.items()},
                         {s: sorted(names[p] for p in ps)
                          for s, ps in c.mappings.items()})
                        for c in chosen] == [
                    (a, m) for _key, a, m in expected]
        assert len(offsets) == (3 if most else 0)
        return True
    finally:
        env.close()


def test_dispersion_offsets_take_turns():
    """The offsets of one question's requests come each once in most + 1
    requests, far apart; from a seed, the same ones; another question has
    its own turns. Turns are kept by the Cloud, by keys.Key alone."""
    shape = keys.Key('dispersion', None, 'shape')
    other = keys.Key('dispersion', None, 'other')

    def offsets(env, key, count):
        with env.db.replica_reader() as conn:
            view = cloud.request_view(conn)
            return [dispersion.next_offset(view, key, 9, seed=3)
                    for _request in range(count)]

    one, again = harness.Environment('sqlite'), harness.Environment('sqlite')
    try:
        taken = offsets(one, shape, 20)
        assert sorted(taken[:10]) == list(range(10))
        assert taken[10:] == taken[:10]
        assert all(abs(a - b) >= 3 for a, b in zip(taken, taken[1:]))
        assert offsets(again, shape, 20) == taken
        assert offsets(one, other, 1) == offsets(again, other, 1)
        with pytest.raises(TypeError):
            offsets(one, ('dispersion', None, 'shape'), 1)
    finally:
        one.close()
        again.close()


def test_server_order_names_a_class_that_does_not_exist():
    """A class of the option that does not exist is left out: requests
    are ranked by the others, not refused."""
    env = harness.Environment('sqlite', **{
        'placement.allocation_candidates_rank_by':
            'spread:CUSTOM_NOPE,MEMORY_MB'})
    try:
        worlds.load_into_db(env.db, _flat_hosts(5))
        status, _headers, body = env.request(
            'GET', '/allocation_candidates?resources=MEMORY_MB:64&limit=2',
            version='1.36')
        assert status == 200, body
        assert [list(r['allocations']) for r in body['allocation_requests']
                ] == [[worlds.uuid_of('h000')], [worlds.uuid_of('h001')]]
    finally:
        env.close()


def test_a_bad_server_order_stops_the_service_at_start():
    with pytest.raises(ValueError, match=r'^\[placement\] allocation_'
                       r'candidates_rank_by: rank_by=most:VCPU: expected'):
        harness.Environment('sqlite', **{
            'placement.allocation_candidates_rank_by': 'most:VCPU'})


def _flat_hosts(count):
    return [{'name': 'h%03d' % h,
             'inventories': {'VCPU': 8, 'MEMORY_MB': 1024 + 16 * h},
             'used': {'MEMORY_MB': (37 * h) % 512}} for h in range(count)]


def test_limit_walks_only_the_best_trees(sqlite_env):
    """200 hosts, spread on memory, limit=5: five trees walked, and they are
    the five with the most memory free."""
    world = _flat_hosts(200)
    worlds.load_into_db(sqlite_env.db, world)
    status, _headers, body = sqlite_env.request(
        'GET', '/allocation_candidates?resources=VCPU:1,MEMORY_MB:64'
        '&rank_by=spread:MEMORY_MB&limit=5&explain=true', version='1.42')
    assert status == 200, body
    free = sorted(((1024 + 16 * h - (37 * h) % 512 - 64, 'h%03d' % h)
                   for h in range(200)), reverse=True)[:5]
    assert [c['free'] for c in body['explain']['ranking']['candidates']] == [
        {'MEMORY_MB': amount} for amount, _name in free]
    assert [list(r['allocations']) for r in body['allocation_requests']] == [
        [worlds.uuid_of(name)] for _amount, name in free]
    assert body['explain']['ranking']['walked'] == 5


@pytest.mark.parametrize('query, version, options', [
    ('rank_by=spread:MEMORY_MB&limit=5', '1.42', {}),
    ('limit=5', '1.36', {
        'placement.allocation_candidates_rank_by': 'spread:MEMORY_MB'})])
def test_ranking_by_free_searches_only_the_best_trees(monkeypatch, query,
                                                      version, options):
    """200 hosts, spread on memory, limit=5: one window is searched, of the
    64 hosts keeping the most memory free (db.cloud.orders), not the whole
    cloud; the answer is their best five."""
    env = harness.Environment('sqlite', **options)
    try:
        world = _flat_hosts(200)
        ids = worlds.load_into_db(env.db, world)
        windows = worlds.record_windows(monkeypatch)
        status, _headers, body = env.request(
            'GET', '/allocation_candidates?resources=VCPU:1,MEMORY_MB:64&'
            + query, version=version)
        assert status == 200, body
        free = sorted(((1024 + 16 * h - (37 * h) % 512, 'h%03d' % h)
                       for h in range(200)), reverse=True)
        assert [list(r['allocations']) for r in body[
            'allocation_requests']] == [[worlds.uuid_of(name)]
                                        for _amount, name in free[:5]]
        assert {window.roots for window in windows} == {
            frozenset(ids[name] for _amount, name in free[:64])}
    finally:
        env.close()


def _hosts_with_traits(count):
    """``count`` hosts; every third has CUSTOM_A, every fifth is in the
    aggregate of a sharing provider of DISK_GB."""
    world = []
    for h in range(count):
        host = {'name': 'h%03d' % h,
                'inventories': {'VCPU': {'total': 8},
                                'MEMORY_MB': {'total': 1024 + 16 * h},
                                'DISK_GB': {'total': 100}},
                'used': {'MEMORY_MB': (37 * h) % 512},
                'traits': ['CUSTOM_A'] if h % 3 == 0 else []}
        if h % 5 == 0:
            host['aggregates'] = ['agg']
        world.append(host)
    world.append({'name': 'share', 'aggregates': ['agg'],
                  'traits': [SHARES],
                  'inventories': {'DISK_GB': {'total': 1000}},
                  'used': {}})
    return world


@pytest.mark.parametrize('query', [
    'preferred=CUSTOM_A&rank_by=spread:MEMORY_MB',
    'root_preferred=CUSTOM_A',
    'rank_by=spread:MEMORY_MB&explain=true',
    'rank_by=spread:DISK_GB,MEMORY_MB',
    'resources_X=VCPU:1&resources_Y=MEMORY_MB:1&alternatives=_X,_Y'
    '&group_policy=none&rank_by=pack:MEMORY_MB'])
def test_ranked_requests_search_only_some_windows(monkeypatch, query):
    """200 hosts, limit=5, keyed by preferred traits, with explain, by a
    class a sharing provider holds, by alternatives: the answer is the
    brute-force one, and the windows searched hold some of the trees,
    not the whole cloud."""
    env = harness.Environment('sqlite')
    try:
        world = _hosts_with_traits(200)
        ids = worlds.load_into_db(env.db, world)
        pairs = [('resources', 'VCPU:1,MEMORY_MB:64,DISK_GB:10')] + [
            tuple(pair.split('=')) for pair in query.split('&')]
        expected = _oracle(env, world, ids, pairs, 5)
        windows = worlds.record_windows(monkeypatch)
        answer, _explained = _ranked(env, ids, pairs, 5)
        assert answer == [(a, m) for _key, a, m in expected]
        searched = set().union(*(window.roots for window in windows))
        assert None not in windows and len(searched) < 200
    finally:
        env.close()


def test_in_tree_searches_that_tree_alone(monkeypatch):
    """A group kept to one host by in_tree, ranked or not: only that
    host's tree is searched."""
    env = harness.Environment('sqlite')
    try:
        ids = worlds.load_into_db(env.db, _flat_hosts(200))
        for query, version in [('limit=5', '1.36'),
                               ('limit=5&rank_by=spread:MEMORY_MB', '1.42')]:
            windows = worlds.record_windows(monkeypatch)
            status, _headers, body = env.request(
                'GET', '/allocation_candidates?resources=VCPU:1&in_tree=%s&'
                % worlds.uuid_of('h007') + query, version=version)
            assert status == 200, body
            assert [list(r['allocations']) for r in body[
                'allocation_requests']] == [[worlds.uuid_of('h007')]]
            assert {window.roots for window in windows} == {
                frozenset([ids['h007']])}
    finally:
        env.close()


def test_the_server_order_of_trees_is_made_at_start(monkeypatch):
    """A process with allocation_candidates_rank_by orders the trees by it
    as it starts (warm_caches_on_start): its first request finds them
    ordered, and after a change the order is made again from what the
    process keeps, as the same order."""
    made = []
    real = orders.TreeOrder.warm

    def making(self):
        made.append(self.orders)
        real(self)

    monkeypatch.setattr(orders.TreeOrder, 'warm', making)
    loaded = harness.Environment('sqlite')
    worlds.load_into_db(loaded.db, _flat_hosts(20))
    env = harness.Environment(
        'sqlite', database_url=loaded.db.url,
        **{'placement.allocation_candidates_rank_by': 'spread:MEMORY_MB'})
    try:
        assert len(made) == 1
        free = sorted(((1024 + 16 * h - (37 * h) % 512, 'h%03d' % h)
                       for h in range(20)), reverse=True)
        (most, best), (_second_most, second) = free[:2]

        def best_host():
            body = env.request('GET', '/allocation_candidates?resources='
                               'MEMORY_MB:64&limit=1', version='1.36')[2]
            return list(body['allocation_requests'][0]['allocations'])

        assert best_host() == [worlds.uuid_of(best)]
        assert env.request('PUT', '/allocations/%s' % worlds.uuid_of('c'), {
            'allocations': {worlds.uuid_of(best): {
                'resources': {'MEMORY_MB': most - 64}}},
            'project_id': worlds.uuid_of('p'),
            'user_id': worlds.uuid_of('u'), 'consumer_generation': None},
            version='1.28')[0] == 204
        assert best_host() == [worlds.uuid_of(second)]
        assert len(made) == 1
    finally:
        env.close()
        loaded.close()


@pytest.fixture
def sqlite_env():
    env = harness.Environment('sqlite')
    yield env
    env.close()


def _parse(query):
    return engine.parse_query(
        [tuple(part.split('=', 1)) for part in query.split('&')], RANKED)


@pytest.mark.parametrize('query, detail', [
    ('resources=VCPU:1&rank_by=VCPU',
     "rank_by=VCPU: the first resource class needs 'spread:' or 'pack:' "
     'before it.'),
    ('resources=VCPU:1&rank_by=most:VCPU',
     "rank_by=most:VCPU: expected 'spread:' or 'pack:' before a resource "
     "class, got 'most:'."),
    ('resources=VCPU:1&rank_by=spread:VCPU,',
     'rank_by=spread:VCPU,: an empty resource class.'),
    ('resources=VCPU:1&rank_by=spread:VCPU,pack:VCPU',
     'rank_by=spread:VCPU,pack:VCPU names VCPU twice.'),
    ('resources=VCPU:1&preferred=!CUSTOM_A',
     'preferred=!CUSTOM_A: preferred traits are trait names, without ! or '
     'in:.'),
    ('resources=VCPU:1&root_preferred=CUSTOM_A,',
     'root_preferred=CUSTOM_A,: an empty trait name.'),
    ('resources=VCPU:1&preferred_X=CUSTOM_A',
     'preferred_X names no request group: there is no resources_X, '
     'required_X or member_of_X.'),
    ('resources_A=VCPU:1&alternatives=_A',
     'alternatives=_A: name at least two suffixed groups.'),
    ('resources_A=VCPU:1&resources_B=VCPU:2&alternatives=_A,',
     'alternatives=_A,: the unsuffixed group can not be an alternative.'),
    ('resources_A=VCPU:1&alternatives=_A,_X',
     "alternatives=_A,_X names suffixes no group of the request has: "
     "['_X']."),
    ('resources_A=VCPU:1&resources_B=VCPU:2&resources_C=VCPU:3'
     '&alternatives=_A,_B&alternatives=_B,_C&group_policy=none',
     'alternatives=_B,_C: _B already in another alternatives set.'),
])
def test_bad_ranking_parameters(query, detail):
    with pytest.raises(errors.BadRequest) as raised:
        _parse(query)
    assert raised.value.args[0] == detail
    assert raised.value.code == errors.QUERYPARAM_BAD_VALUE


def test_alternatives_count_as_one_group_for_group_policy():
    request = _parse('resources_A=VCPU:1&resources_B=VCPU:2'
                     '&alternatives=_A,_B')
    assert [(a.rank, a.used, list(a.request.groups))
            for a in rank_query.alternative_requests(request)] == [
        ((0,), ('_A',), ['_A']), ((1,), ('_B',), ['_B'])]


def test_alternatives_stand_for_each_other_in_constraints():
    request = _parse('resources=VCPU:1&resources_A=CUSTOM_GPU:1'
                     '&resources_B=CUSTOM_FPGA:1&resources_N=SRIOV_NET_VF:1'
                     '&alternatives=_A,_B&same_subtree=_A,_N'
                     '&group_policy=isolate:_B,_N')
    second = rank_query.alternative_requests(request)[1].request
    assert list(second.groups) == ['', '_B', '_N']
    assert second.same_subtrees == [{'_B', '_N'}]
    assert second.isolated == frozenset({'_B', '_N'})
