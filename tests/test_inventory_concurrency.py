"""Concurrent writers of inventories, resource classes and traits: never a
500, never a lost update.

Writers of one provider's inventory that carry the same generation (or that
add the same class) queue on the provider: one wins, the others get 409
``placement.concurrent_update``. Creators of names all succeed, exactly one
of them with a 201.
"""

import pytest

from tests import races

#: Run on MariaDB too (see tests/conftest.py).
pytestmark = pytest.mark.mysql

PROVIDER = '1d000000-0000-4000-8000-000000000001'
INVENTORIES = '/resource_providers/%s/inventories' % PROVIDER
WRITERS = 8


@pytest.fixture
def provider(environment):
    races.create_provider(environment, PROVIDER)


def _stored(environment):
    _status, _headers, body = environment.request('GET', INVENTORIES,
                                                  version='1.26')
    return body


def test_concurrent_replacements(environment, provider):
    bodies = [{'resource_provider_generation': 0,
               'inventories': {'VCPU': {'total': n + 1},
                               'DISK_GB': {'total': 100 + n}}}
              for n in range(WRITERS)]
    results = races.race(environment, [('PUT', INVENTORIES, body)
                                       for body in bodies], '1.26')
    races.assert_one_winner(results, 200)
    winner = races.winning_body(results, bodies)
    stored = _stored(environment)
    assert stored['resource_provider_generation'] == 1
    assert {rc: inv['total'] for rc, inv in stored['inventories'].items()} == {
        rc: inv['total'] for rc, inv in winner['inventories'].items()}


def test_concurrent_additions_of_one_class(environment, provider):
    results = races.race(environment, [
        ('POST', INVENTORIES, {'resource_class': 'VCPU', 'total': n + 1})
        for n in range(WRITERS)], '1.26')
    races.assert_one_winner(results, 201)
    stored = _stored(environment)
    assert stored['resource_provider_generation'] == 1
    assert list(stored['inventories']) == ['VCPU']


def test_concurrent_updates_of_one_class(environment, provider):
    environment.request('POST', INVENTORIES,
                        {'resource_class': 'VCPU', 'total': 1}, version='1.26')
    results = races.race(environment, [
        ('PUT', INVENTORIES + '/VCPU',
         {'resource_provider_generation': 1, 'total': n + 10})
        for n in range(WRITERS)], '1.26')
    races.assert_one_winner(results, 200)
    winner = next(payload for status, payload in results if status == 200)
    stored = _stored(environment)
    assert stored['resource_provider_generation'] == 2
    assert stored['inventories']['VCPU']['total'] == winner['total']


def test_concurrent_creators_of_one_class(environment):
    results = races.race(environment, [
        ('PUT', '/resource_classes/CUSTOM_RACE', None)] * WRITERS, '1.26')
    assert sorted(status for status, _payload in results) == (
        [201] + [204] * (WRITERS - 1))


def test_concurrent_creators_of_different_classes(environment):
    """Custom class ids are picked at once; collisions are retried."""
    results = races.race(environment, [
        ('POST', '/resource_classes', {'name': 'CUSTOM_RACE_%d' % n})
        for n in range(WRITERS)], '1.26')
    assert [status for status, _payload in results] == [201] * WRITERS
    _status, _headers, body = environment.request('GET', '/resource_classes',
                                                  version='1.26')
    names = [rc['name'] for rc in body['resource_classes']]
    assert sorted(name for name in names if name.startswith('CUSTOM_')) == (
        ['CUSTOM_RACE_%d' % n for n in range(WRITERS)])


def test_concurrent_creators_of_one_trait(environment):
    results = races.race(environment, [
        ('PUT', '/traits/CUSTOM_RACE', None)] * WRITERS, '1.26')
    assert sorted(status for status, _payload in results) == (
        [201] + [204] * (WRITERS - 1))
