"""Each tree's first candidate kept between requests (engine.reuse): given
again only while the providers the search offers under the tree are the
same and unchanged, so that an answer made of kept candidates is, byte
for byte, the answer of a process that kept nothing, after writes of
every kind, through the API and straight into the database as another
service would make them."""

import datetime
import random

import pytest

from placement_lite.db import cloud
from placement_lite.db import tables
from placement_lite.db.cloud import firsts
from placement_lite.engine import combine
from tests import candidate_worlds as worlds
from tests import harness

U = worlds.uuid_of
HOSTS = ('cn1', 'cn2', 'cn3', 'cn4', 'cn5')
AGG = U('agg1')


def _world():
    """Hosts with two NUMA nodes each (VCPU, MEMORY_MB) and disk of their
    own, the first three also served disk by a sharing provider."""
    world = [{'name': 'ss', 'inventories': {'DISK_GB': 500},
              'traits': ['MISC_SHARES_VIA_AGGREGATE'],
              'aggregates': ['agg1']}]
    for index, host in enumerate(HOSTS):
        world.append({'name': host, 'inventories': {'DISK_GB': 100},
                      'aggregates': ['agg1'] if index < 3 else []})
        for numa in ('0', '1'):
            world.append({
                'name': host + 'numa' + numa, 'parent': host,
                'inventories': {'VCPU': 4, 'MEMORY_MB': 4096},
                'traits': ['HW_CPU_X86_AVX2'] if numa == '1' else []})
    return world


#: (query, microversion): every group shape the engine combines, each
#: bounded (the paths that keep first candidates), rendered with and
#: without mappings.
QUERIES = [
    ('resources=VCPU:1,MEMORY_MB:512,DISK_GB:10&limit=3', '1.39'),
    ('resources=VCPU:1,MEMORY_MB:512,DISK_GB:10&limit=3', '1.29'),
    ('resources=VCPU:1,MEMORY_MB:512,DISK_GB:10&limit=40', '1.39'),
    ('resources=VCPU:1,DISK_GB:10&member_of=%s&limit=10' % AGG, '1.39'),
    ('resources=VCPU:1&required=HW_CPU_X86_AVX2&limit=10', '1.36'),
    ('resources1=VCPU:1&resources2=VCPU:1,MEMORY_MB:256'
     '&resources=DISK_GB:5&group_policy=isolate&limit=10', '1.39'),
    ('resources1=VCPU:1&required1=HW_CPU_X86_AVX2'
     '&resources2=MEMORY_MB:512&group_policy=none&limit=10', '1.39'),
    # Ranked by free amounts: each tree's first in the trees' order.
    ('resources=VCPU:1,MEMORY_MB:512,DISK_GB:10&rank_by=spread:MEMORY_MB'
     '&limit=3', '1.42'),
    ('resources=VCPU:1,MEMORY_MB:512&rank_by=pack:VCPU&limit=20', '1.42'),
    # Ranked by more than free amounts: the trees walked best key first.
    ('resources=VCPU:1,MEMORY_MB:512&required=HW_CPU_X86_AVX2'
     '&rank_by=spread:MEMORY_MB&preferred=HW_CPU_X86_AVX2&limit=6', '1.42'),
    ('resources=MEMORY_MB:512&resources_A=VCPU:1&required_A=HW_CPU_X86_AVX2'
     '&resources_B=VCPU:2&alternatives=_A,_B&rank_by=spread:MEMORY_MB'
     '&group_policy=none&limit=8', '1.42'),
    # Not kept (same_subtree): answered as ever.
    ('resources1=VCPU:1&resources2=MEMORY_MB:512&required3=HW_CPU_X86_AVX2'
     '&same_subtree=1,2,3&group_policy=none&limit=10', '1.39'),
]


class _Cloud:
    """The world served, and the writes made to it."""

    def __init__(self, env, rng):
        self.env = env
        self.rng = rng
        self.ids = worlds.load_into_db(env.db, _world())
        with env.db.writer() as conn:
            # As the API creates them: a provider without a creation time
            # is read again whole on every change (SQLite).
            conn.execute(tables.resource_providers.update().values(
                created_at=datetime.datetime(2026, 11, 29)))
        self.consumers = []
        self.claims = 0

    def call(self, method, path, body=None, version='1.39', expect=None):
        status, _headers, answer = self.env.request(method, path, body,
                                                    version=version)
        assert expect is None or status == expect, (status, answer)
        return answer

    def generation(self, name):
        return self.call('GET', '/resource_providers/%s' % U(name),
                         expect=200)['generation']

    def claim(self, numa=None, disk=None):
        """An instance on ``numa`` with disk of ``disk``, by default
        picked at random."""
        host = self.rng.choice(HOSTS)
        self.claims += 1
        consumer = U('consumer-%d' % self.claims)
        numa = numa or host + 'numa' + self.rng.choice('01')
        disk = disk or self.rng.choice([host, 'ss'])
        status, _h, _b = self.env.request(
            'PUT', '/allocations/%s' % consumer,
            {'allocations': {U(numa): {'resources': {'VCPU': 1,
                                                     'MEMORY_MB': 1024}},
                             U(disk): {'resources': {'DISK_GB': 40}}},
             'project_id': U('p'), 'user_id': U('u'),
             'consumer_generation': None}, version='1.28')
        assert status in (204, 409)
        if status == 204:
            self.consumers.append(consumer)
        return status

    def release(self):
        if self.consumers:
            consumer = self.consumers.pop(self.rng.randrange(
                len(self.consumers)))
            self.call('DELETE', '/allocations/%s' % consumer, expect=204)

    def release_as_another_service(self):
        """Allocation rows deleted straight from the database: no
        provider's generation moves."""
        if self.consumers:
            consumer = self.consumers.pop(self.rng.randrange(
                len(self.consumers)))
            allocations = tables.allocations
            with self.env.db.writer() as conn:
                deleted = conn.execute(allocations.delete().where(
                    allocations.c.consumer_id == consumer)).rowcount
            assert deleted == 3

    def inventory(self):
        numa = self.rng.choice(HOSTS) + 'numa' + self.rng.choice('01')
        self.call('PUT', '/resource_providers/%s/inventories' % U(numa),
                  {'resource_provider_generation': self.generation(numa),
                   'inventories': {
                       'VCPU': {'total': self.rng.choice([2, 4, 8])},
                       'MEMORY_MB': {'total': 4096}}})

    def traits(self):
        numa = self.rng.choice(HOSTS) + 'numa' + self.rng.choice('01')
        self.call('PUT', '/resource_providers/%s/traits' % U(numa),
                  {'resource_provider_generation': self.generation(numa),
                   'traits': self.rng.choice([[], ['HW_CPU_X86_AVX2']])},
                  expect=200)

    def aggregates(self):
        host = self.rng.choice(HOSTS)
        self.call('PUT', '/resource_providers/%s/aggregates' % U(host),
                  {'resource_provider_generation': self.generation(host),
                   'aggregates': self.rng.choice([[], [AGG]])}, expect=200)

    def move(self):
        """A NUMA node without allocations moved to another host."""
        numa = self.rng.choice(HOSTS) + 'numa' + self.rng.choice('01')
        host = self.rng.choice(HOSTS)
        status, _h, _b = self.env.request(
            'PUT', '/resource_providers/%s' % U(numa),
            {'name': numa, 'parent_provider_uuid': U(host)}, version='1.37')
        assert status in (200, 400, 409)

    CHANGES = ('claim', 'claim', 'release', 'release_as_another_service',
               'inventory', 'traits', 'aggregates', 'move')


def _answers(env):
    answers = []
    for query, version in QUERIES:
        status, _headers, body = env.respond(
            'GET', '/allocation_candidates?' + query, version=version)
        assert status == 200, body
        answers.append(body)
    return answers


@pytest.fixture(params=[None, 'spread:MEMORY_MB,VCPU'],
                ids=['reference order', 'server order'])
def served_env(request, backend, environment):
    """The environment, or one whose bounded requests are ranked by the
    server's order (``[placement] allocation_candidates_rank_by``: each
    tree's first candidate from its roomiest providers, in the trees'
    order of what they keep free)."""
    if request.param is None:
        yield environment
        return
    env = harness.Environment(backend, **{
        'placement.allocation_candidates_rank_by': request.param})
    yield env
    env.close()


@pytest.mark.mysql
@pytest.mark.parametrize('seed', range(3))
def test_kept_first_candidates_answer_as_a_fresh_process(served_env, seed,
                                                         monkeypatch):
    """After each write, every answer equals, byte for byte, the one made
    with nothing kept, and the one of a process that kept nothing."""
    environment = served_env
    given = []
    first = firsts.Firsts.first

    def counting(self, anchor, offer):
        found = first(self, anchor, offer)
        given.append(found is not firsts.NOT_KEPT)
        return found

    monkeypatch.setattr(firsts.Firsts, 'first', counting)
    rng = random.Random(seed)
    served = _Cloud(environment, rng)
    read_engine = environment.db.read_engine
    for _step in range(14):
        # The second request of a process keeps what it makes (see
        # test_only_trees_changed_are_made_again).
        _answers(environment)
        _answers(environment)
        getattr(served, rng.choice(_Cloud.CHANGES))()
        given.clear()
        kept = _answers(environment)
        assert any(given)
        cloud.of(read_engine).first_candidates.clear()
        assert kept == _answers(environment)
        cloud.forget(read_engine)
        assert kept == _answers(environment)


def test_only_trees_changed_are_made_again(environment, monkeypatch):
    """A request of the shape asked before walks only the trees whose
    providers changed since, a write of another service's included."""
    walked = []
    for_anchor = combine.Combiner.for_anchor

    def recording(self, anchor, every=False):
        walked.append(anchor)
        return for_anchor(self, anchor, every)

    monkeypatch.setattr(combine.Combiner, 'for_anchor', recording)
    served = _Cloud(environment, random.Random(0))
    ids = served.ids
    query = 'resources=VCPU:1,MEMORY_MB:512,DISK_GB:10&limit=5'

    def trees_walked():
        walked.clear()
        worlds.candidates(environment, query)
        return sorted(walked)

    def made_again(trees):
        # By the request that reads the change (it keeps what it makes
        # as of the clock before it read) and the next one; not after.
        assert trees_walked() == trees
        assert trees_walked() == trees
        assert trees_walked() == []

    made_again(sorted(ids[host] for host in HOSTS))
    assert served.claim('cn2numa0', 'cn2') == 204
    made_again([ids['cn2']])
    served.release_as_another_service()
    made_again([ids['cn2']])
    # What the sharing provider gives changes every tree it serves.
    assert served.claim('cn4numa1', 'ss') == 204
    made_again(sorted(ids[host] for host in ('cn1', 'cn2', 'cn3', 'cn4')))
    served.call('PUT', '/resource_providers/%s/inventories' % U('ss'),
                {'resource_provider_generation': served.generation('ss'),
                 'inventories': {'DISK_GB': {'total': 400}}}, expect=200)
    made_again(sorted(ids[host] for host in HOSTS[:3]))


def test_the_least_recently_given_go_first(environment):
    served = _Cloud(environment, random.Random(0))
    first_candidates = cloud.of(environment.db.read_engine).first_candidates
    first_candidates.most = 3
    one = 'resources=VCPU:1&limit=5'
    other = 'resources=MEMORY_MB:100&limit=5'

    def kept():
        return [(key.question.count('MEMORY_MB'), anchor)
                for (key, anchor), _value in first_candidates.entries()]

    worlds.candidates(environment, one)
    worlds.candidates(environment, one)
    # The last three trees given are kept, in the order given.
    last_three = [served.ids[host] for host in HOSTS[2:]]
    assert kept() == [(0, tree) for tree in last_three]
    worlds.candidates(environment, other)
    assert kept() == [(1, tree) for tree in last_three]
