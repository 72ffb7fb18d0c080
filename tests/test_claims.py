"""Claims (1.43, domain/claims.py) against the brute-force oracle of
ranked candidates (tests/test_ranked_candidates.py), on random worlds, on
each database: a claim alone takes the candidate the oracle ranks first;
concurrent claims never over-commit, write exactly what they answered,
and answer "nothing fits" only when nothing does; a batch with
trees=distinct is all or nothing; a batch with trees=same_aggregate lands
where a model of the documented walk, on the world's own numbers, puts
it, or nowhere."""

import collections
import threading
import urllib.parse
import uuid

import pytest
import sqlalchemy as sa
from hypothesis import HealthCheck
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from placement_lite import engine
from placement_lite import errors
from placement_lite.db import tables
from tests import candidate_worlds as worlds
from tests import checked_share
from tests import claims as claim_load
from tests import harness
from tests import test_ranked_candidates as ranked

VERSION = '1.43'
OWNER = {'project_id': 'project', 'user_id': 'user',
         'consumer_generation': None, 'consumer_type': 'INSTANCE'}


def claim(env, pairs, consumers, trees=None):
    """(status, body) of POST /allocation_claims?``pairs`` for the
    consumer uuids ``consumers``."""
    body = {'consumers': {consumer: OWNER for consumer in consumers}}
    if trees:
        body['trees'] = trees
    status, _headers, answer = env.request(
        'POST', '/allocation_claims?' + urllib.parse.urlencode(pairs), body,
        version=VERSION)
    return status, answer


def with_claim_key(pairs):
    """``pairs`` ranked as a claim ranks them: their rank_by, else spread
    on the classes they ask for (engine.claim_rank_by)."""
    if any(name == 'rank_by' for name, _value in pairs):
        return pairs
    orders = engine.claim_rank_by(
        engine.parse_query(pairs, ranked.RANKED)).orders
    if not orders:
        return pairs
    return pairs + [('rank_by', ','.join(map(str, orders)))]


def claim_oracle(env, world, ids, pairs, limit):
    """The brute-force answer of ``pairs`` ranked as a claim ranks them
    (with_claim_key): a tree's candidates roomiest choices first under a
    key the claim did not bring (as for the server's key)."""
    own = any(name == 'rank_by' for name, _value in pairs)
    return ranked._oracle(env, world, ids, with_claim_key(pairs), limit,
                          roomiest_first=not own)


def _by_name(allocations, names):
    return {names[uuid]: resources['resources']
            for uuid, resources in allocations.items()}


#: The least share of examples checked: the generators are the ranked
#: candidates tests' (ranked.LEAST_CHECKED).
LEAST_CHECKED = ranked.LEAST_CHECKED


@pytest.mark.slow
def test_a_quiet_claim_takes_the_oracle_s_first(backend):
    share = checked_share.CheckedShare(LEAST_CHECKED)

    @settings(max_examples=60, deadline=None,
              suppress_health_check=[HealthCheck.too_slow,
                                     HealthCheck.data_too_large])
    @given(world=ranked.random_worlds(), query=ranked.ranked_queries())
    def check(world, query):
        share.example()
        pairs, _limit = query
        env = harness.Environment(backend)
        try:
            ids = worlds.load_into_db(env.db, world)
            names = {worlds.uuid_of(name): name for name in ids}
            try:
                expected = claim_oracle(env, world, ids, pairs, 1)
            except errors.BadRequest:
                share.give_up()
                return
            status, answer = claim(env, pairs, [str(uuid.uuid4())])
            if not expected:
                assert status == 409, answer
                assert answer['errors'][0]['code'] == (
                    errors.CLAIM_NOTHING_FITS)
                return
            assert status == 200, answer
            (claimed,) = answer['claims'].values()
            _key, allocations, mappings = expected[0]
            assert _by_name(claimed['allocations'], names) == allocations
            assert {suffix: sorted(names[uuid] for uuid in uuids)
                    for suffix, uuids in claimed['mappings'].items()
                    } == mappings
            assert answer['refused'] == 0
        finally:
            env.close()

    check()
    share.assert_enough()


def _capacities(world):
    """{(provider name, class): capacity} of the world."""
    return {(p['name'], rc): ranked._capacity(inventory)
            for p in world for rc, inventory in p['inventories'].items()}


def _used(world, acknowledged, names):
    """{(provider name, class): used} after the acknowledged claims."""
    used = collections.Counter({(p['name'], rc): amount for p in world
                                for rc, amount in p['used'].items()})
    for allocations in acknowledged.values():
        for provider, taken in allocations.items():
            for rc, amount in taken['resources'].items():
                used[names[provider], rc] += amount
    return used


@pytest.mark.slow
def test_concurrent_claims_never_overcommit(backend):
    """Clients claim together until nothing fits: the database holds
    exactly the claims answered 200, within every capacity, and a claim
    answered "nothing fits" is one for which the oracle, after all the
    claims (which only add usage), finds no candidate."""
    share = checked_share.CheckedShare(LEAST_CHECKED)

    @settings(max_examples=25, deadline=None,
              suppress_health_check=[HealthCheck.too_slow,
                                     HealthCheck.data_too_large])
    @given(world=ranked.random_worlds(), query=ranked.ranked_queries(),
           clients=st.integers(2, 4), batch=st.integers(1, 2))
    def check(world, query, clients, batch):
        share.example()
        pairs, _limit = query
        pairs = [pair for pair in pairs if pair[0] != 'limit']
        env = harness.Environment(backend)
        try:
            ids = worlds.load_into_db(env.db, world)
            names = {worlds.uuid_of(name): name for name in ids}
            try:
                engine.parse_query(pairs, ranked.RANKED)
                claim_oracle(env, world, ids, pairs, 1)
            except errors.BadRequest:
                share.give_up()
                return
            _claim_together(env, world, ids, names, pairs, clients, batch)
        finally:
            env.close()

    check()
    share.assert_enough()


def _claim_together(env, world, ids, names, pairs, clients, batch):
    """test_concurrent_claims_never_overcommit's check of one example."""
    before = claim_load.allocations_in_database(env.db)
    acknowledged = {}
    statuses = collections.Counter()
    nothing_fits = []
    lock = threading.Lock()

    def client():
        for _round in range(6):
            consumers = [str(uuid.uuid4()) for _ in range(batch)]
            status, answer = claim(env, pairs, consumers)
            with lock:
                statuses[status] += 1
                if status == 200:
                    acknowledged.update(
                        (consumer, given['allocations'])
                        for consumer, given in answer['claims'].items())
                else:
                    assert status == 409, answer
                    code = answer['errors'][0]['code']
                    assert code == errors.CLAIM_NOTHING_FITS, answer
                    nothing_fits.append(consumers)
            if status != 200:
                return

    threads = [threading.Thread(target=client) for _ in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not any(thread.is_alive() for thread in threads)
    held = claim_load.allocations_in_database(env.db)
    assert {consumer: allocations for consumer, allocations
            in held.items() if consumer not in before} == {
        consumer: {provider: given['resources'] for provider, given
                   in allocations.items()}
        for consumer, allocations in acknowledged.items()}
    capacities = _capacities(world)
    for key, used in _used(world, acknowledged, names).items():
        assert used <= capacities[key], key
    if nothing_fits and batch == 1:
        assert claim_oracle(env, world, ids, pairs, 1) == []


def _hosts(count):
    return [{'name': 'h%03d' % h, 'inventories': {'VCPU': 4, 'MEMORY_MB':
                                                    4096 + 64 * h}}
            for h in range(count)]


@pytest.mark.parametrize('hosts, status', [(100, 200), (99, 409)])
def test_a_batch_of_100_on_distinct_hosts(hosts, status):
    """100 consumers with trees=distinct: on 100 hosts each gets a host of
    its own; on 99 the 100th cannot, and nothing is written."""
    env = harness.Environment('sqlite')
    try:
        worlds.load_into_db(env.db, _hosts(hosts))
        consumers = [str(uuid.uuid4()) for _ in range(100)]
        answered, answer = claim(
            env, [('resources', 'VCPU:1,MEMORY_MB:512')], consumers,
            trees='distinct')
        assert answered == status, answer
        held = claim_load.allocations_in_database(env.db)
        if status == 409:
            assert answer['errors'][0]['code'] == errors.CLAIM_NOTHING_FITS
            assert held == {}
            return
        assert list(answer['claims']) == consumers
        hosts_taken = [list(held[consumer]) for consumer in consumers]
        assert all(len(taken) == 1 for taken in hosts_taken)
        assert len({taken[0] for taken in hosts_taken}) == 100
    finally:
        env.close()


def test_a_claim_walks_on_when_its_best_is_taken(monkeypatch):
    """A candidate lost between the search and the write (here taken just
    before the claim's transaction) is refused at commit, and the next
    best is claimed in the same request."""
    env = harness.Environment('sqlite')
    try:
        worlds.load_into_db(env.db, _hosts(3))
        best = worlds.uuid_of('h002')
        real = engine.claim_order

        def taken_meanwhile(*args, **kwargs):
            order = real(*args, **kwargs)
            status, _headers, body = env.request(
                'PUT', '/allocations/%s' % uuid.uuid4(), {
                    'allocations': {best: {'resources': {'VCPU': 4}}},
                    'project_id': 'p', 'user_id': 'u',
                    'consumer_generation': None}, version='1.28')
            assert status == 204, body
            return order

        monkeypatch.setattr(engine, 'claim_order', taken_meanwhile)
        status, answer = claim(env, [('resources', 'VCPU:1'),
                                     ('rank_by', 'spread:MEMORY_MB')],
                               [str(uuid.uuid4())])
        assert status == 200, answer
        assert answer['refused'] == 1
        (claimed,) = answer['claims'].values()
        assert list(claimed['allocations']) == [worlds.uuid_of('h001')]
    finally:
        env.close()


@pytest.mark.parametrize('dispersion, hosts_taken', [(0, 1), (4, 4)])
def test_dispersed_claims_start_at_different_trees(dispersion, hosts_taken):
    """Packing claims of one shape all take the fullest host; with
    allocation_candidates_dispersion their walks start at the offsets the
    shape takes in turn, each at another of the best five."""
    env = harness.Environment('sqlite', **{
        'placement.allocation_candidates_dispersion': dispersion,
        'placement.allocation_candidates_dispersion_seed': 7})
    try:
        worlds.load_into_db(env.db, [
            {'name': 'h%03d' % h, 'inventories': {'VCPU': 128},
             'used': {'VCPU': 10 * h}} for h in range(8)])
        taken = set()
        # A claim of one VCPU reorders no host (10 VCPU apart).
        for _claim in range(4):
            status, answer = claim(env, [('resources', 'VCPU:1'),
                                         ('rank_by', 'pack:VCPU')],
                                   [str(uuid.uuid4())])
            assert status == 200, answer
            (claimed,) = answer['claims'].values()
            taken.update(claimed['allocations'])
        assert len(taken) == hosts_taken
    finally:
        env.close()


#: Aggregates the same_aggregate worlds add to their providers.
RACKS = ('rack-a', 'rack-b', 'rack-c')


@st.composite
def worlds_in_racks(draw):
    """ranked.random_worlds, each provider (a root, a child, the sharing
    provider) a member of some of RACKS besides its own aggregates: only
    the roots' count."""
    world = draw(ranked.random_worlds())
    for provider in world:
        racks = draw(st.lists(st.sampled_from(RACKS), unique=True,
                              max_size=2))
        if racks:
            provider['aggregates'] = provider.get('aggregates', []) + racks
    return world


def _packed(world, ranked_list, count):
    """The documented same_aggregate walk on the world's own numbers:
    (aggregate name, [allocations by name per consumer], candidates
    refused), or None when no aggregate holds ``count`` consumers.

    ``ranked_list``: the candidates the claim considers, best first (the
    oracle's). A candidate is in the aggregates every root of the
    providers it allocates from or maps is a member of; aggregates are
    tried in the order of their best candidates (ties by uuid); in each,
    consumers take the first candidate that fits, from the one after the
    last taken, wrapping around."""
    root_of = ranked._trees(world)
    membership = {p['name']: set(p.get('aggregates', ())) for p in world}
    by_aggregate = {}
    for _key, allocations, mappings in ranked_list:
        providers = set(allocations).union(*mappings.values())
        shared = set.intersection(*(membership[root_of[p]]
                                    for p in providers))
        for aggregate in sorted(shared, key=worlds.uuid_of):
            by_aggregate.setdefault(aggregate, []).append(allocations)
    capacities = _capacities(world)
    refused = 0
    for aggregate, walk in by_aggregate.items():
        used = _used(world, {}, {})
        taken = []
        position = 0
        for _consumer in range(count):
            for step in range(len(walk)):
                at = (position + step) % len(walk)
                if all(used[p, rc] + amount <= capacities[p, rc]
                       for p, resources in walk[at].items()
                       for rc, amount in resources.items()):
                    for p, resources in walk[at].items():
                        for rc, amount in resources.items():
                            used[p, rc] += amount
                    taken.append(walk[at])
                    position = at + 1
                    break
                refused += 1
            else:
                break
        else:
            return aggregate, taken, refused
    return None


def _consumer_uuids(db):
    with db.reader() as conn:
        return set(conn.execute(sa.select(tables.consumers.c.uuid)).scalars())


@pytest.mark.slow
def test_a_same_aggregate_batch_lands_where_the_model_packs_it(backend):
    """A quiet batch with trees=same_aggregate takes exactly what the
    model's walk gives each consumer, in the first aggregate in rank order
    that holds them all, every tree of every claimed candidate a member of
    it; when the model finds no aggregate, 409 nothing fits and nothing is
    written (no allocation, no consumer)."""
    share = checked_share.CheckedShare(LEAST_CHECKED)

    @settings(max_examples=60, deadline=None,
              suppress_health_check=[HealthCheck.too_slow,
                                     HealthCheck.data_too_large])
    @given(world=worlds_in_racks(), query=ranked.ranked_queries(),
           count=st.integers(1, 4))
    def check(world, query, count):
        share.example()
        pairs, limit = query
        env = harness.Environment(backend)
        try:
            ids = worlds.load_into_db(env.db, world)
            try:
                ranked_list = claim_oracle(env, world, ids, pairs, limit)
            except errors.BadRequest:
                share.give_up()
                return
            if limit:
                pairs = pairs + [('limit', str(limit))]
            _batch_lands_as_packed(env, world, ids, pairs, ranked_list,
                                   count)
        finally:
            env.close()

    check()
    share.assert_enough()


def _batch_lands_as_packed(env, world, ids, pairs, ranked_list, count):
    """test_a_same_aggregate_batch_lands_where_the_model_packs_it's check
    of one example."""
    names = {worlds.uuid_of(name): name for name in ids}
    held_before = claim_load.allocations_in_database(env.db)
    consumers_before = _consumer_uuids(env.db)
    batch = [str(uuid.uuid4()) for _ in range(count)]
    status, answer = claim(env, pairs, batch, trees='same_aggregate')
    expected = _packed(world, ranked_list, count)
    if expected is None:
        assert status == 409, answer
        assert answer['errors'][0]['code'] == errors.CLAIM_NOTHING_FITS
        assert claim_load.allocations_in_database(env.db) == held_before
        assert _consumer_uuids(env.db) == consumers_before
        return
    aggregate, taken, refused = expected
    assert status == 200, answer
    assert list(answer['claims']) == batch
    assert [_by_name(answer['claims'][consumer]['allocations'], names)
            for consumer in batch] == taken
    assert answer['refused'] == refused
    root_of = ranked._trees(world)
    membership = {p['name']: set(p.get('aggregates', ())) for p in world}
    for claimed in answer['claims'].values():
        used = set(_by_name(claimed['allocations'], names)).union(*(
            {names[uuid] for uuid in uuids}
            for uuids in claimed['mappings'].values()))
        assert all(aggregate in membership[root_of[p]] for p in used)


@pytest.mark.parametrize('share_aggregates, hosts_taken', [
    (['storage'], ['h2', 'h2']),
    (['storage', 'rack'], ['h1', 'h2']),
])
def test_a_sharing_provider_must_be_in_the_aggregate(share_aggregates,
                                                      hosts_taken):
    """h1 (in rack and storage, no disk of its own) ranks first by VCPU but
    takes its disk from the sharing provider, which has room for one
    consumer; h2 (in rack) has disk of its own. A batch of two: the
    candidate h1 + share is in the aggregates both roots are in, storage
    alone (which holds one consumer, not two) unless the share is in rack
    too: then rack holds h1 + share and h2; else both consumers pack onto
    h2, rack's only other candidate."""
    env = harness.Environment('sqlite')
    try:
        worlds.load_into_db(env.db, [
            {'name': 'h1', 'inventories': {'VCPU': 8},
             'aggregates': ['rack', 'storage']},
            {'name': 'h2', 'inventories': {'VCPU': 4, 'DISK_GB': 10},
             'aggregates': ['rack']},
            {'name': 'share', 'inventories': {'DISK_GB': 1},
             'traits': [ranked.SHARES], 'aggregates': share_aggregates}])
        batch = [str(uuid.uuid4()), str(uuid.uuid4())]
        status, answer = claim(env, [('resources', 'VCPU:1,DISK_GB:1'),
                                     ('rank_by', 'spread:VCPU')], batch,
                               trees='same_aggregate')
        assert status == 200, answer
        hosts = {worlds.uuid_of(name): name for name in ('h1', 'h2')}
        assert [hosts[uuid] for consumer in batch
                for uuid in answer['claims'][consumer]['allocations']
                if uuid in hosts] == hosts_taken
    finally:
        env.close()
