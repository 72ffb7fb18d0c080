"""can_split (1.44, engine/split.py) against the brute-force oracle of
tests/split_oracle.py, on random worlds, on each database:

* every candidate returned could be written (each allocation line within
  its provider's free capacity and units);
* a tree where a split class can be served (whole, or by some valid
  split) is offered;
* the candidates are exactly those the documented rule picks: without a
  limit all of them, with one the first candidate of as many trees as can
  serve, in tree order, each one of the oracle's;
* ranked (1.42), they come in the order of the rank key over what each
  leaves its tree free (tests/test_ranked_candidates.py's brute force);
* tree by tree, engine/split.py's splits are those of every composition
  enumerated.

Each world answers a series of requests in one process, so that what
the process keeps between requests (the store, kept first candidates)
is exercised too.
"""

import collections
import itertools

import numpy as np
import pytest
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from placement_lite import engine
from placement_lite.engine import question
from placement_lite.engine import split
from tests import candidate_worlds as worlds
from tests import checked_share
from tests import harness
from tests import split_oracle as oracle
from tests import test_ranked_candidates as ranked

VERSION = (1, 44)


def _answer(env, ids, pairs):
    """The engine's candidates of ``pairs``: [(root name, allocations
    by name, mappings by name)], in the answer's order."""
    names = {id_: name for name, id_ in ids.items()}
    request = engine.parse_query(pairs, VERSION)
    with engine.find_candidates(env.db, env.conf, request) as found:
        return [(names[c.anchor],
                 {names[p]: dict(r) for p, r in c.allocations.items()},
                 {s: sorted(names[p] for p in ps)
                  for s, ps in c.mappings.items()})
                for c in found.allocation_requests]


def check_request(env, model, ids, pairs, checked, share):
    """The engine's answer to ``pairs`` is the oracle's (see the module's
    docstring); ``checked`` (a Counter) counts what the request proved,
    ``share`` (a checked_share.CheckedShare) whether its answer holds a
    split."""
    expected, offers = oracle.candidates(model, pairs)
    answer = _answer(env, ids, pairs)
    for _root, allocations, _mappings in answer:
        assert oracle.valid_candidate(model, allocations), (pairs, answer)
    keys = [oracle.key(candidate) for candidate in answer]
    assert len(set(keys)) == len(keys), (pairs, answer)
    limit = dict(pairs).get('limit')
    if limit is None:
        assert sorted(keys) == sorted(map(oracle.key, expected)), pairs
    else:
        limit = int(limit)
        assert set(keys) <= set(map(oracle.key, expected)), (pairs, answer)
        offering = list(dict.fromkeys(root for root, _a, _m in expected))
        trees = list(dict.fromkeys(root for root, _a, _m in answer))
        if len(offering) >= limit:
            assert trees == offering[:limit], pairs
            assert len(answer) == limit, pairs
        else:
            assert trees == offering, pairs
            assert len(answer) == min(limit, len(expected)), pairs
    checked['requests'] += 1
    share.example()
    splitting = set().union(*(tree.splitting for tree in offers.values()))
    if not splitting & set(keys):
        # Checked, but it proves only that nothing is split needlessly.
        share.give_up()
    refused = {root for root, tree in offers.items()
               if oracle.REFUSED in tree.served.values()}
    assert not refused & {root for root, _a, _m in answer}, (pairs, answer)
    checked['trees refused with parts to give'] += len(refused)
    groups = oracle.groups_of(pairs)
    if len(groups) == 1:
        (suffix, group), = groups.items()
        if len(group.resources) == 1 and group.can_split:
            rc, = group.resources
            served = {root: tree.served[suffix, rc]
                      for root, tree in offers.items()}
            offered = {root for root, tree in offers.items() if tree.given}
            assert offered == {root for root, how in served.items()
                               if how in (oracle.WHOLE, oracle.SPLIT)}, pairs
            checked['trees offered by a split alone'] += sum(
                how == oracle.SPLIT for how in served.values())


#: The least share of random requests whose answer must hold a candidate
#: taking a class in parts (most of the others prove only that what needs
#: no split is not split), and the least number of trees in a thousand
#: requests refused though their providers could take parts, and offered
#: (a one-class request) only by a split.
LEAST_SPLIT_SHARE = 0.15
LEAST_TREES = 100


def check_worlds(backend, seeds, requests_per_world):
    """``requests_per_world`` random requests on the random world of each
    of ``seeds``, each world in a fresh database served by one process;
    returns a Counter of what they checked. Fails unless a stated share
    of the answers hold a split."""
    checked = collections.Counter()
    share = checked_share.CheckedShare(
        LEAST_SPLIT_SHARE, checked='whose answer holds a split',
        others='whose answer splits nothing')
    for seed in seeds:
        rng = oracle.rng_for(seed)
        world = oracle.random_world(rng)
        model = oracle.Model(world)
        env = harness.Environment(backend)
        try:
            ids = worlds.load_into_db(env.db, world)
            for _request in range(requests_per_world):
                check_request(env, model, ids, oracle.random_request(rng),
                              checked, share)
        finally:
            env.close()
    print(dict(checked))
    share.assert_enough()
    return checked


def test_random_requests_equal_the_oracle(backend):
    """A few worlds, in the edit-test loop."""
    assert check_worlds(backend, range(5), 10)['requests'] == 50


@pytest.mark.slow
def test_a_thousand_random_requests_equal_the_oracle(backend):
    """The issue's measure: 1,000 random requests per database, a stated
    share of them splitting, and trees refused and offered by a split."""
    checked = check_worlds(backend, range(100, 140), 25)
    assert checked['requests'] == 1000
    assert checked['trees refused with parts to give'] >= LEAST_TREES, checked
    assert checked['trees offered by a split alone'] >= LEAST_TREES, checked


def _ranked_request(rng):
    """A random request ranked by one or two classes, maybe preferring a
    physnet for the VF group, and a limit or None."""
    pairs = [pair for pair in oracle.random_request(rng)
             if pair[0] != 'limit']
    terms = rng.sample(['VCPU', 'MEMORY_MB', 'DISK_GB'], rng.randint(1, 2))
    pairs.append(('rank_by', ','.join(
        '%s:%s' % (rng.choice(['spread', 'pack']), rc) for rc in terms)))
    if 'resources_NET' in dict(pairs) and rng.random() < 0.4:
        pairs.append(('preferred_NET', rng.choice(oracle.PHYSNETS)))
    return pairs, rng.choice([None, 1, 2, 3])


def _splitting(model, pairs):
    """Whether some candidate of ``pairs`` takes a class from several
    providers for one group."""
    found, _offers = oracle.candidates(model, pairs)
    return any(len(split) > 1 for tree in _offers.values()
               for _suffix, options in tree.needs for split in options) and (
        bool(found))


def _ranked_splitting_worlds(count):
    """(world, pairs, limit) of the first ``count`` random ranked requests
    whose candidates split, from seeds 200 on."""
    found = []
    seed = 200
    while len(found) < count:
        rng = oracle.rng_for(seed)
        world = oracle.random_world(rng)
        pairs, limit = _ranked_request(rng)
        if _splitting(oracle.Model(world), pairs):
            found.append((world, pairs, limit))
        seed += 1
    return found


@pytest.mark.parametrize('narrow', [False, True])
def test_ranked_split_candidates_equal_brute_force(backend, narrow):
    """Ranked requests whose candidates split: the bounded ranked walk
    (with ``narrow`` windows, tree after tree) gives the brute-force
    order."""
    for world, pairs, limit in _ranked_splitting_worlds(15):
        assert ranked.check_world(backend, world, pairs, limit, narrow,
                                  VERSION)


def test_a_bounded_answer_makes_only_the_splits_it_takes(monkeypatch):
    """A tree of 12 PFs with 1 VF free each offers C(12, 6) = 924 splits
    of 6 VFs; limit=1 makes only the first of them (the work follows the
    limit), and without a limit every one is given."""
    made = []
    real = split.Split.__init__

    def counting(self, takes):
        made.append(takes)
        real(self, takes)

    monkeypatch.setattr(split.Split, '__init__', counting)
    world = [{'name': 'host', 'parent': None, 'inventories': {},
              'used': {}}] + [
        {'name': 'pf%02d' % pf, 'parent': 'host',
         'inventories': {'SRIOV_NET_VF': 2}, 'used': {'SRIOV_NET_VF': 1}}
        for pf in range(12)]
    env = harness.Environment('sqlite')
    try:
        worlds.load_into_db(env.db, world)
        query = ('resources_NET=SRIOV_NET_VF:6'
                 '&can_split_NET=SRIOV_NET_VF')
        body = worlds.candidates(env, query + '&limit=1', version='1.44')
        assert [len(r['allocations'])
                for r in body['allocation_requests']] == [6]
        assert len(made) == 1
        body = worlds.candidates(env, query, version='1.44')
        assert len(body['allocation_requests']) == 924
        assert len(made) == 1 + 924
    finally:
        env.close()


@st.composite
def _tree_units(draw):
    """(amount, the _Units of a tree's providers that may take a part)."""
    amount = draw(st.integers(2, 12))
    units = []
    for provider in range(draw(st.integers(1, 5))):
        step = draw(st.sampled_from([1, 1, 2, 3]))
        least = step * draw(st.integers(1, 2))
        most = step * draw(st.integers(least // step, 11 // step))
        if least <= min(most, amount - 1):
            units.append(split._Units(provider + 1, least, min(
                most, (amount - 1) // step * step), step))
    return amount, [u for u in units if u.least <= u.most]


def _every_composition(units, amount):
    """Every tuple of parts of ``units`` (each in its range and steps)
    adding up to ``amount``."""
    ranges = [range(u.least, u.most + 1, u.step) for u in units]
    return [parts for parts in itertools.product(*ranges)
            if sum(parts) == amount]


@settings(max_examples=300, deadline=None)
@given(_tree_units())
def test_splits_are_the_greatest_of_the_fewest(tree):
    """engine/split.py against brute force, tree by tree: each set's part
    is the greatest composition in roomiest order; the sets are those of
    the fewest providers with a composition; a tree known to split without
    making one (_plainly_split) has one."""
    amount, units = tree
    listed = sorted(units, key=lambda u: (-u.most, u.provider))
    expected = []
    for count in range(2, len(listed) + 1):
        for chosen in itertools.combinations(listed, count):
            found = _every_composition(chosen, amount)
            if found:
                expected.append([(u.provider, part) for u, part
                                 in zip(chosen, max(found))])
        if expected:
            break
    made = [[(p, take['VCPU']) for p, take in one.takes]
            for one in split.Splits('VCPU', amount, units)]
    assert made == expected
    plain = split._plainly_split(
        np.ones(len(units), np.int64), np.array([u.least for u in units]),
        np.array([u.most for u in units]), np.array([u.step for u in units]),
        amount) if units else np.zeros(1, bool)
    if plain[0]:
        assert expected
    if units and all(u.least == 1 and u.step == 1 for u in units):
        assert bool(plain[0]) == bool(expected)


def test_can_split_makes_another_question():
    """What a process keeps for a request is keyed by its question's text
    (engine/question.py): the same request with can_split, or with
    another class split, is another question."""
    options = question.Options(None, 0, None, 1000, 'breadth-first', False,
                               True)
    texts = {question.Question(engine.parse_query(
        [('resources', 'VCPU:2,MEMORY_MB:512')] + split, VERSION),
        options).text for split in (
            [], [('can_split', 'VCPU')], [('can_split', 'MEMORY_MB')],
            [('can_split', 'VCPU,MEMORY_MB')])}
    assert len(texts) == 4
