"""The checks of a load's writes against the database (tests/claims.py)
and of its answers (tests/rolling_restart.py) find what they are for: a
write applied while its answer said otherwise, a write applied in part,
a 409 the load does not provoke by design.

Each case is a client's ledger and what the database holds, made up."""

from placement_lite import errors
from tests import claims
from tests import rolling_restart

PROVIDER = 'rp-1'
ONE = {PROVIDER: {'VCPU': 1}}
TWO = {PROVIDER: {'VCPU': 2}}


class Ledger:
    """What a client keeps: its writes, in order."""

    def __init__(self, *writes):
        self.writes = list(writes)


class Made:
    """What a provider maker keeps."""

    def __init__(self, writes=(), stocks=()):
        self.writes, self.stocks = list(writes), list(stocks)


def answer(operation, status, code=None, detail=''):
    error = {'code': code, 'detail': detail} if code else None
    return claims.Answer(operation, status, error, 0.0)


CAPACITY = answer('put', 409, errors.DEFAULT,
                  'There was a conflict...\n\n Unable to allocate inventory: '
                  'Unable to create allocation for VCPU.')
CONSUMER_CONFLICT = answer(
    'put', 409, errors.CONCURRENT_UPDATE,
    'consumer generation conflict - expected null but got 1')
PROVIDER_CONFLICT = answer(
    'post', 409, errors.CONCURRENT_UPDATE,
    'Inventory and/or allocations changed while attempting to allocate: '
    'Another thread concurrently updated the resource provider data. '
    'Please retry your update')


def problems(held, *writes):
    return claims.write_problems(held, [Ledger(*writes)])


def test_acknowledged_writes_as_answered_pass():
    assert problems(
        {'b': TWO},
        claims.Write(answer('put', 204), {'a': ONE}),
        claims.Write(answer('post', 204), {'b': TWO, 'c': ONE}),
        claims.Write(answer('move', 204), {'c': None, 'd': ONE}),
        claims.Write(answer('delete', 204), {'a': None}),
        claims.Write(answer('delete', 204), {'d': None}),
        claims.Write(CAPACITY, {'e': TWO})) == []


def test_unanswered_writes_applied_whole_or_not_at_all_pass():
    created = claims.Write(answer('put', 204), {'a': ONE})
    moved = claims.Write(answer('move', None), {'a': None, 'b': TWO})
    assert problems({'a': ONE}, created, moved) == []
    assert problems({'b': TWO}, created, moved) == []
    bad_gateway = claims.Write(answer('post', 502), {'c': ONE, 'd': TWO})
    assert problems({'c': ONE, 'd': TWO}, bad_gateway) == []


def test_a_write_applied_while_answered_409_fails():
    # A resent PUT that met its own committed first try.
    assert problems({'a': ONE}, claims.Write(CONSUMER_CONFLICT,
                                             {'a': ONE})) == [
        "put of ['a']: applied, but answered 409 placement.concurrent_update"]
    # A resent DELETE.
    assert problems(
        {}, claims.Write(answer('put', 204), {'a': ONE}),
        claims.Write(answer('delete', 404, errors.DEFAULT), {'a': None})) == [
        "delete of ['a']: applied, but answered 404 placement.undefined_code"]


def test_a_write_half_applied_fails():
    # A two-consumer POST without an answer, one consumer written.
    assert problems({'a': ONE}, claims.Write(
        answer('post', None), {'a': ONE, 'b': TWO})) == [
        "post of ['a', 'b']: half applied (answered None)"]
    # A move that released the old consumer only.
    assert problems({}, claims.Write(answer('put', 204), {'a': ONE}),
                    claims.Write(answer('move', None),
                                 {'a': None, 'b': TWO})) == [
        "move of ['a', 'b']: half applied (answered None)"]


def test_an_acknowledged_write_missing_fails():
    assert problems({}, claims.Write(answer('put', 204), {'a': ONE})) == [
        "a: holds None, acknowledged {'rp-1': {'VCPU': 1}}"]
    assert problems({'a': ONE}, claims.Write(answer('put', 204), {'a': ONE}),
                    claims.Write(answer('delete', 204), {'a': None})) == [
        "a: holds {'rp-1': {'VCPU': 1}}, acknowledged None"]


def test_an_unknown_consumer_and_over_capacity_fail():
    assert problems({'x': {PROVIDER: {'VCPU': 25}}}) == [
        'over capacity: rp-1 VCPU used 25', 'x: no client wrote it']


def test_provider_writes_checked_whatever_their_answer():
    stocked = {resource_class: inventory['total'] for resource_class,
               inventory in claims.INVENTORIES.items()}
    made = Made(writes=[('p1', answer('create', 200)),
                        ('p2', answer('create', None)),
                        ('p3', answer('create', 409,
                                      errors.DUPLICATE_NAME))],
                stocks=[('p1', answer('inventories', 200)),
                        ('p2', answer('inventories', None))])
    assert claims.provider_problems({'p1', 'p2'}, {'p1': stocked},
                                    [made]) == []
    assert claims.provider_problems(
        {'p1', 'p3'}, {'p2': stocked}, [made]) == [
        'create p3: applied, but answered 409 placement.duplicate_name',
        'inventories of p1: answered 200, but not applied']


def test_only_the_409s_of_the_design_are_expected():
    outcome = rolling_restart.outcome_of
    assert outcome(CAPACITY) == '409 by design'
    assert outcome(PROVIDER_CONFLICT) == '409 by design'
    assert outcome(CONSUMER_CONFLICT) == 'other 4xx'
    assert outcome(answer('create', 409, errors.DUPLICATE_NAME)) == (
        'other 4xx')
    assert outcome(CAPACITY._replace(operation='inventories')) == (
        'other 4xx')
    assert outcome(answer('read', 200)) == '2xx'
    assert outcome(answer('read', 502)) == '5xx'
    assert outcome(answer('read', None)) == 'no answer'
