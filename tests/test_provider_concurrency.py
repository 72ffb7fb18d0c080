"""Concurrent writers of one provider: one wins, the others get a 409.

Every request carries the same provider generation; exactly one may
succeed, the rest must see ``placement.concurrent_update`` (never a 500 or
a lost update).
"""

import pytest

from tests import races

#: Run on MariaDB too (see tests/conftest.py).
pytestmark = pytest.mark.mysql

PROVIDER = '0d000000-0000-4000-8000-000000000001'
WRITERS = 8


@pytest.fixture
def provider(environment):
    races.create_provider(environment, PROVIDER)


def _race(environment, method, path, bodies):
    return races.race(environment, [(method, path, body) for body in bodies],
                      '1.23')


def test_concurrent_aggregate_writers(environment, provider):
    # Every body shares one aggregate, so the writers would collide on the
    # same membership row if they did not queue on the provider first.
    bodies = [{'aggregates': ['0a000000-0000-4000-8000-00000000cafe',
                              '0a000000-0000-4000-8000-%012d' % n],
               'resource_provider_generation': 0} for n in range(WRITERS)]
    results = _race(environment, 'PUT',
                    '/resource_providers/%s/aggregates' % PROVIDER, bodies)
    races.assert_one_winner(results)
    winner = races.winning_body(results, bodies)
    _status, _headers, stored = environment.request(
        'GET', '/resource_providers/%s/aggregates' % PROVIDER, version='1.23')
    assert sorted(stored['aggregates']) == sorted(winner['aggregates'])
    assert stored['resource_provider_generation'] == 1


def test_concurrent_trait_writers(environment, provider):
    choices = ['HW_CPU_X86_AVX', 'HW_CPU_X86_SSE', 'HW_CPU_X86_SSE2',
               'HW_CPU_X86_SSE3', 'STORAGE_DISK_SSD', 'HW_NIC_SRIOV',
               'HW_GPU_API_VULKAN', 'HW_CPU_X86_AVX2']
    bodies = [{'traits': [choice], 'resource_provider_generation': 0}
              for choice in choices[:WRITERS]]
    results = _race(environment, 'PUT',
                    '/resource_providers/%s/traits' % PROVIDER, bodies)
    races.assert_one_winner(results)
    winner = races.winning_body(results, bodies)
    _status, _headers, stored = environment.request(
        'GET', '/resource_providers/%s/traits' % PROVIDER, version='1.23')
    assert stored == {'traits': winner['traits'],
                      'resource_provider_generation': 1}


def test_concurrent_creators_of_one_aggregate(environment):
    """Providers joining the same new aggregate at once all succeed."""
    uuids = ['0d000000-0000-4000-8000-1000000000%02d' % n
             for n in range(WRITERS)]
    for n, uuid in enumerate(uuids):
        races.create_provider(environment, uuid, name='p%d' % n)

    results = races.race(environment, [
        ('PUT', '/resource_providers/%s/aggregates' % uuid,
         {'aggregates': ['0a000000-0000-4000-8000-00000000beef'],
          'resource_provider_generation': 0}) for uuid in uuids], '1.23')
    assert [status for status, _payload in results] == [200] * WRITERS
    _status, _headers, body = environment.request(
        'GET', '/resource_providers?member_of='
        '0a000000-0000-4000-8000-00000000beef', version='1.23')
    assert len(body['resource_providers']) == WRITERS
