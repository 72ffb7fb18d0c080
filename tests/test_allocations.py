"""Allocation writes and reads through the app, providers seeded in the DB.

Each test runs on SQLite and PostgreSQL (the ``environment`` fixture).
"""

import pytest

from placement_lite import errors
from placement_lite.domain import allocations
from tests import harness
from tests import seed

RP1 = '11111111-1111-1111-1111-111111111111'
RP2 = '22222222-2222-2222-2222-222222222222'
MISSING = '99999999-9999-9999-9999-999999999999'
C1 = 'c0000000-0000-0000-0000-000000000001'
C2 = 'c0000000-0000-0000-0000-000000000002'


def body(allocs, generation=None, consumer_type=None, project='p', user='u'):
    data = {'allocations': {rp: {'resources': res} for rp, res in allocs.items()},
            'project_id': project, 'user_id': user,
            'consumer_generation': generation}
    if consumer_type:
        data['consumer_type'] = consumer_type
    return data


def detail(payload):
    return payload['errors'][0]['detail']


@pytest.fixture
def env(environment):
    seed.add_provider(environment.db, RP1, 'cn1', {
        'VCPU': {'total': 8, 'allocation_ratio': 2.0, 'reserved': 2},
        'MEMORY_MB': {'total': 1024, 'step_size': 256, 'min_unit': 256,
                      'max_unit': 512},
    })
    seed.add_provider(environment.db, RP2, 'disk', {'DISK_GB': {'total': 100}})
    return environment


def usages(env, rp):
    status, _h, payload = env.request('GET', '/resource_providers/%s/usages'
                                      % rp)
    assert status == 200
    return payload


def test_capacity_uses_reserved_and_ratio(env):
    # (8 - 2) * 2.0 = 12 VCPU
    status, _h, _p = env.request('PUT', '/allocations/' + C1,
                                 body({RP1: {'VCPU': 12}}), version='1.28')
    assert status == 204
    status, _h, payload = env.request(
        'PUT', '/allocations/' + C2, body({RP1: {'VCPU': 1}}), version='1.28')
    assert status == 409
    assert detail(payload).endswith(
        "Unable to allocate inventory: Unable to create allocation for 'VCPU' "
        "on resource provider '%s'. The requested amount would exceed the "
        "capacity.  " % RP1)
    assert usages(env, RP1) == {'resource_provider_generation': 1,
                                'usages': {'VCPU': 12, 'MEMORY_MB': 0}}


@pytest.mark.parametrize('amount', [128, 768, 300])
def test_min_max_step_are_enforced(env, amount):
    status, _h, payload = env.request(
        'PUT', '/allocations/' + C1, body({RP1: {'MEMORY_MB': amount}}),
        version='1.28')
    assert status == 409
    assert 'would violate inventory constraints' in detail(payload)


def test_replacing_own_allocation_does_not_count_twice(env):
    assert env.request('PUT', '/allocations/' + C1, body({RP1: {'VCPU': 10}}),
                       version='1.28')[0] == 204
    status, _h, _p = env.request('PUT', '/allocations/' + C1,
                                 body({RP1: {'VCPU': 12}}, generation=1),
                                 version='1.28')
    assert status == 204
    assert usages(env, RP1)['usages']['VCPU'] == 12


def test_consumer_generations(env):
    status, _h, payload = env.request('PUT', '/allocations/' + C1,
                                      body({RP1: {'VCPU': 1}}, generation=3),
                                      version='1.28')
    assert status == 409
    assert payload['errors'][0]['code'] == errors.CONCURRENT_UPDATE
    assert 'consumer generation conflict - expected null but got 3' in detail(
        payload)
    assert env.request('PUT', '/allocations/' + C1, body({RP1: {'VCPU': 1}}),
                       version='1.28')[0] == 204
    status, _h, payload = env.request('PUT', '/allocations/' + C1,
                                      body({RP1: {'VCPU': 1}}), version='1.28')
    assert status == 409
    assert 'consumer generation conflict - expected 1 but got None' in detail(
        payload)
    # Before 1.28 the generation is not checked.
    assert env.request('PUT', '/allocations/' + C1,
                       {'allocations': [{'resource_provider': {'uuid': RP1},
                                         'resources': {'VCPU': 2}}],
                        'project_id': 'p', 'user_id': 'u'},
                       version='1.8')[0] == 204
    status, _h, payload = env.request('GET', '/allocations/' + C1)
    assert payload['consumer_generation'] == 2
    assert payload['allocations'][RP1] == {'resources': {'VCPU': 2},
                                           'generation': 2}


def test_failed_write_changes_nothing(env):
    status, _h, payload = env.request(
        'PUT', '/allocations/' + C1,
        body({RP1: {'VCPU': 1}, MISSING: {'VCPU': 1}}), version='1.28')
    assert status == 400
    assert ("Allocation for resource provider '%s' that does not exist."
            % MISSING) in detail(payload)
    # Unlike the reference, no consumer is left behind: null still works.
    assert env.request('PUT', '/allocations/' + C1, body({RP1: {'VCPU': 1}}),
                       version='1.28')[0] == 204
    assert usages(env, RP1)['resource_provider_generation'] == 1


def test_post_is_atomic(env):
    data = {C1: body({RP1: {'VCPU': 2}}), C2: body({RP2: {'DISK_GB': 101}})}
    status, _h, payload = env.request('POST', '/allocations', data,
                                      version='1.28')
    assert status == 409
    assert "'DISK_GB'" in detail(payload)
    assert usages(env, RP1)['usages']['VCPU'] == 0
    assert env.request('GET', '/allocations/' + C1)[2] == {'allocations': {}}
    data[C2] = body({RP2: {'DISK_GB': 100}})
    assert env.request('POST', '/allocations', data, version='1.28')[0] == 204
    assert usages(env, RP2)['usages'] == {'DISK_GB': 100}


def test_post_moves_allocations_between_consumers(env):
    assert env.request('PUT', '/allocations/' + C1, body({RP1: {'VCPU': 12}}),
                       version='1.28')[0] == 204
    # Emptying C1 and giving C2 the whole capacity in one write fits.
    data = {C1: body({}, generation=1), C2: body({RP1: {'VCPU': 12}})}
    assert env.request('POST', '/allocations', data, version='1.28')[0] == 204
    assert env.request('GET', '/allocations/' + C1)[2] == {'allocations': {}}
    status, _h, payload = env.request('GET', '/resource_providers/%s/allocations'
                                      % RP1)
    assert payload == {'allocations': {C2: {'resources': {'VCPU': 12},
                                            'consumer_generation': 1}},
                       'resource_provider_generation': 2}


def test_empty_put_creates_bare_consumer_like_the_reference(env):
    assert env.request('PUT', '/allocations/' + C1, body({}),
                       version='1.28')[0] == 204
    status, _h, payload = env.request('PUT', '/allocations/' + C1,
                                      body({RP1: {'VCPU': 1}}), version='1.28')
    assert status == 409
    assert 'expected 0 but got None' in detail(payload)
    assert env.request('PUT', '/allocations/' + C1,
                       body({RP1: {'VCPU': 1}}, generation=0),
                       version='1.28')[0] == 204


def test_over_capacity_provider_accepts_changes_that_do_not_worsen(env):
    assert env.request('PUT', '/allocations/' + C1, body({RP2: {'DISK_GB': 80}}),
                       version='1.28')[0] == 204
    seed.set_inventory_total(env.db, RP2, 'DISK_GB', 50)
    status, _h, _p = env.request('PUT', '/allocations/' + C1,
                                 body({RP2: {'DISK_GB': 60}}, generation=1),
                                 version='1.28')
    assert status == 204
    status, _h, _p = env.request('PUT', '/allocations/' + C1,
                                 body({RP2: {'DISK_GB': 61}}, generation=2),
                                 version='1.28')
    assert status == 409


def test_delete(env):
    assert env.request('PUT', '/allocations/' + C1, body({RP1: {'VCPU': 1}}),
                       version='1.28')[0] == 204
    assert env.request('DELETE', '/allocations/' + C1)[0] == 204
    status, _h, payload = env.request('DELETE', '/allocations/' + C1)
    assert status == 404
    assert "No allocations for consumer '%s'" % C1 in detail(payload)
    # The consumer went with its allocations: null is the right generation.
    assert env.request('PUT', '/allocations/' + C1, body({RP1: {'VCPU': 1}}),
                       version='1.28')[0] == 204


def test_incomplete_consumer_placeholders(backend):
    env = harness.Environment(
        backend, **{'placement.incomplete_consumer_project_id': 'proj-x',
                    'placement.incomplete_consumer_user_id': 'user-x'})
    try:
        seed.add_provider(env.db, RP1, 'cn1', {'VCPU': {'total': 4}})
        status, _h, _p = env.request(
            'PUT', '/allocations/' + C1,
            {'allocations': [{'resource_provider': {'uuid': RP1},
                              'resources': {'VCPU': 1}}]}, version='1.7')
        assert status == 204
        payload = env.request('GET', '/allocations/' + C1, version='1.12')[2]
        assert (payload['project_id'], payload['user_id']) == ('proj-x',
                                                               'user-x')
        payload = env.request('GET', '/usages?project_id=proj-x')[2]
        assert payload == {'usages': {'unknown': {'VCPU': 1,
                                                  'consumer_count': 1}}}
    finally:
        env.close()


def test_usages_by_consumer_type(env):
    for consumer, ctype, vcpu in ((C1, 'INSTANCE', 2), (C2, 'MIGRATION', 3)):
        assert env.request('PUT', '/allocations/' + consumer,
                           body({RP1: {'VCPU': vcpu}, RP2: {'DISK_GB': 5}},
                                consumer_type=ctype))[0] == 204
    payload = env.request('GET', '/usages?project_id=p')[2]
    assert payload == {'usages': {
        'INSTANCE': {'VCPU': 2, 'DISK_GB': 5, 'consumer_count': 1},
        'MIGRATION': {'VCPU': 3, 'DISK_GB': 5, 'consumer_count': 1}}}
    payload = env.request('GET', '/usages?project_id=p&consumer_type=all')[2]
    assert payload == {'usages': {
        'all': {'VCPU': 5, 'DISK_GB': 10, 'consumer_count': 2}}}
    payload = env.request('GET', '/usages?project_id=p&consumer_type=unknown')[2]
    assert payload == {'usages': {}}
    payload = env.request('GET', '/usages?project_id=p&consumer_type=MIGRATION'
                          '&user_id=u')[2]
    assert payload == {'usages': {
        'MIGRATION': {'VCPU': 3, 'DISK_GB': 5, 'consumer_count': 1}}}
    payload = env.request('GET', '/usages?project_id=p', version='1.9')[2]
    assert payload == {'usages': {'VCPU': 5, 'DISK_GB': 10}}


class _Flaky:
    """A write that loses a provider race ``losses`` times."""

    def __init__(self, losses):
        self.losses = losses
        self.calls = 0

    def __call__(self, conn):
        self.calls += 1
        if self.calls <= self.losses:
            raise allocations.ProviderGenerationChanged()
        return 'written'


def test_generation_races_retry_in_new_transactions(environment,
                                                   monkeypatch):
    monkeypatch.setattr(environment.db, 'write_retries', 3)
    work = _Flaky(3)
    assert allocations.in_fresh_transactions(
        environment.db, allocations.POST_WORDING, work) == 'written'
    assert work.calls == 4
    work = _Flaky(4)
    with pytest.raises(errors.Conflict) as raised:
        allocations.in_fresh_transactions(
            environment.db, allocations.POST_WORDING, work)
    assert work.calls == 4
    assert raised.value.code == errors.CONCURRENT_UPDATE
    assert raised.value.detail == (
        'Inventory and/or allocations changed while attempting to allocate: '
        'Another thread concurrently updated the resource provider data. '
        'Please retry your update')
