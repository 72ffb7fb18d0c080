"""Every write is tried again in a new transaction when the database
refuses it for a concurrent one, and changes nothing when it gives up.

The refusal is injected: a request's writer transaction runs its work,
then, before its commit, a statement that makes the server itself raise
the error a conflict raises (PostgreSQL: serialization failure 40001,
deadlock 40P01; MariaDB: deadlock 1213, which is also what a Galera node
answers for a certification conflict, and lock wait timeout 1205; SQLite:
database is locked). The database then rolls the transaction back, as it
does a refused one. For each write the API has:

- refused on every attempt: the request gets 409
  ``placement.concurrent_update`` (allocation writes and the reshaper, as
  the reference answers a conflict there) or 503 (any other write), after
  exactly ``write_retries + 1`` attempts, and reading shows nothing
  changed (projects, users and consumer types included);
- refused twice: the request gets its usual answer on the third attempt,
  and reading shows exactly what it wrote.
"""

import contextlib
import dataclasses
import sqlite3
import uuid

import pymysql
import pytest
import sqlalchemy as sa

from placement_lite.db import api as db_api
from placement_lite.db import tables
from placement_lite.domain import standard_names
from tests import harness

#: Run on MariaDB too (see tests/conftest.py).
pytestmark = pytest.mark.mysql

RETRIES = 3
#: Statements making each server refuse the transaction it runs in, as it
#: refuses one for a concurrent write.
REFUSALS = {
    'postgresql': [
        "DO $$ BEGIN RAISE EXCEPTION 'could not serialize access due to "
        "concurrent update' USING ERRCODE = '40001'; END $$",
        "DO $$ BEGIN RAISE EXCEPTION 'deadlock detected' "
        "USING ERRCODE = '40P01'; END $$"],
    'mysql': [
        "SIGNAL SQLSTATE '40001' SET MYSQL_ERRNO = 1213, MESSAGE_TEXT = "
        "'Deadlock found when trying to get lock; try restarting "
        "transaction'",
        "SIGNAL SQLSTATE 'HY000' SET MYSQL_ERRNO = 1205, MESSAGE_TEXT = "
        "'Lock wait timeout exceeded; try restarting transaction'"],
}


class Refusing:
    """``Database.writer`` of ``db``, refusing the first ``refusals``
    transactions after their work, before their commit."""

    def __init__(self, backend, db, refusals):
        self.backend = backend
        self.writer = db.writer
        self.refusals = refusals
        self.attempts = 0

    @contextlib.contextmanager
    def __call__(self):
        with self.writer() as conn:
            self.attempts += 1
            yield conn
            if self.attempts <= self.refusals:
                self._refuse(conn)

    def _refuse(self, conn):
        if self.backend == 'sqlite':
            raise sa.exc.OperationalError(
                'COMMIT', (), sqlite3.OperationalError('database is locked'))
        statements = REFUSALS[self.backend]
        conn.exec_driver_sql(statements[self.attempts % len(statements)])


@pytest.fixture(scope='module')
def environments():
    """One environment per backend for the whole module: each case works
    on providers and names of its own."""
    made = {}

    def environment(backend):
        if backend not in made:
            made[backend] = harness.Environment(backend)
            made[backend].db.write_retries = RETRIES
        return made[backend]

    yield environment
    for environment in made.values():
        environment.close()


@pytest.fixture
def env(environments, backend):
    return environments(backend)


class Names:
    """Fresh uuids and names for one case."""

    def __init__(self):
        tag = uuid.uuid4().hex[:8].upper()
        self.rp = str(uuid.uuid4())
        self.rp_name = 'rp-' + tag
        self.child = str(uuid.uuid4())
        self.consumer = str(uuid.uuid4())
        self.other = str(uuid.uuid4())
        self.aggregate = str(uuid.uuid4())
        self.project = 'project-' + tag
        self.user = 'user-' + tag
        self.consumer_type = 'TYPE_' + tag
        self.rc = 'CUSTOM_RC_' + tag
        self.trait = 'CUSTOM_TRAIT_' + tag
        self.profile = 'profile-' + tag


def ok(env, method, path, body=None, version='1.39', status=None):
    answer, _headers, payload = env.request(method, path, body,
                                            version=version)
    assert answer < 300 if status is None else answer == status, payload
    return payload


def provider(env, names, inventories=None, traits=()):
    ok(env, 'POST', '/resource_providers',
       {'name': names.rp_name, 'uuid': names.rp})
    if inventories:
        ok(env, 'PUT', '/resource_providers/%s/inventories' % names.rp,
           {'resource_provider_generation': 0, 'inventories': inventories})
    if traits:
        generation = ok(env, 'GET', '/resource_providers/' + names.rp)[
            'generation']
        ok(env, 'PUT', '/resource_providers/%s/traits' % names.rp,
           {'resource_provider_generation': generation,
            'traits': list(traits)})


def claim(env, names, consumer, amount):
    ok(env, 'PUT', '/allocations/' + consumer, {
        'allocations': {names.rp: {'resources': {'VCPU': amount}}},
        'project_id': names.project, 'user_id': names.user,
        'consumer_generation': None, 'consumer_type': 'INSTANCE'})


def owners(env, names):
    """What the database holds of the case's project, user and type."""
    with env.db.reader() as conn:
        return [
            conn.execute(sa.select(sa.func.count()).where(column == value))
            .scalar()
            for column, value in (
                (tables.projects.c.external_id, names.project),
                (tables.users.c.external_id, names.user),
                (tables.consumer_types.c.name, names.consumer_type))]


def provider_state(env, names):
    """The provider (or the 404), its inventories, traits, aggregates."""
    base = '/resource_providers/' + names.rp
    return [env.request('GET', base + suffix, version='1.39')[::2]
            for suffix in ('', '/inventories', '/traits', '/aggregates')]


def allocation_state(env, names):
    return [env.request('GET', '/allocations/' + consumer,
                        version='1.39')[2]
            for consumer in (names.consumer, names.other)] + [
        owners(env, names),
        env.request('GET', '/resource_providers/%s/usages' % names.rp)[2]]


def named_statuses(env, names):
    """Whether the case's resource classes, trait and device profile
    exist: the status of reading each."""
    return [env.request('GET', path, version='1.40')[0] for path in (
        '/resource_classes/' + names.rc,
        '/resource_classes/' + names.rc + '_NEW',
        '/traits/' + names.trait,
        '/device_profiles/' + names.profile)]


@dataclasses.dataclass
class Case:
    name: str
    method: str
    path: str
    body: object
    status: int
    #: (env, names): what the case starts from.
    setup: object
    #: (env, names): what the write changes, as read back.
    read: object
    #: (names): what ``read`` gives after the write.
    after: object
    #: The answer when the write is given up.
    given_up: int = 503
    version: str = '1.39'


VCPU = {'VCPU': {'total': 8}}


def _inventories(names, generation, totals):
    return [
        (200, {'generation': generation, 'uuid': names.rp,
               'name': names.rp_name, 'parent_provider_uuid': None,
               'root_provider_uuid': names.rp}),
        (200, {'resource_provider_generation': generation, 'inventories': {
            rc: {'total': total, 'reserved': 0, 'min_unit': 1,
                 'max_unit': 2147483647, 'step_size': 1,
                 'allocation_ratio': 1.0}
            for rc, total in totals.items()}})]


def inventories_of(env, names):
    """The provider and its inventories as (status, body), or (404, None)."""
    (status, shown), inventories = provider_state(env, names)[:2]
    if status != 200:
        return [(status, None), (inventories[0], None)]
    return [(200, {key: shown[key] for key in (
        'generation', 'uuid', 'name', 'parent_provider_uuid',
        'root_provider_uuid')}), inventories]


def _traits(names, generation, traits):
    return (200, {'resource_provider_generation': generation,
                  'traits': traits})


def _allocations(names, vcpu, generation=2):
    return {'allocations': {names.rp: {'generation': generation,
                                       'resources': {'VCPU': vcpu}}},
            'consumer_generation': 1,
            'project_id': names.project,
            'user_id': names.user, 'consumer_type': names.consumer_type}


def _named(rc=404, new_rc=404, trait=404, profile=404):
    return [rc, new_rc, trait, profile]


def _nothing(env, names):
    pass


CASES = [
    Case('create provider', 'POST', '/resource_providers',
         lambda n: {'name': n.rp_name, 'uuid': n.rp}, 200,
         _nothing, inventories_of,
         lambda n: _inventories(n, 0, {})),
    Case('rename provider', 'PUT', '/resource_providers/{rp}',
         lambda n: {'name': n.rp_name + '-renamed'}, 200,
         provider, lambda env, n: ok(
             env, 'GET', '/resource_providers/' + n.rp)['name'],
         lambda n: n.rp_name + '-renamed'),
    Case('delete provider', 'DELETE', '/resource_providers/{rp}', None, 204,
         provider, lambda env, n: provider_state(env, n)[0][0],
         lambda n: 404),
    Case('replace inventories', 'PUT', '/resource_providers/{rp}/inventories',
         lambda n: {'resource_provider_generation': 0, 'inventories': VCPU},
         200, provider, inventories_of,
         lambda n: _inventories(n, 1, {'VCPU': 8})),
    Case('add an inventory', 'POST', '/resource_providers/{rp}/inventories',
         lambda n: {'resource_provider_generation': 1,
                    'resource_class': 'DISK_GB', 'total': 100}, 201,
         lambda env, n: provider(env, n, VCPU), inventories_of,
         lambda n: _inventories(n, 2, {'VCPU': 8, 'DISK_GB': 100})),
    Case('update an inventory', 'PUT',
         '/resource_providers/{rp}/inventories/VCPU',
         lambda n: {'resource_provider_generation': 1, 'total': 16}, 200,
         lambda env, n: provider(env, n, VCPU), inventories_of,
         lambda n: _inventories(n, 2, {'VCPU': 16})),
    Case('delete an inventory', 'DELETE',
         '/resource_providers/{rp}/inventories/VCPU', None, 204,
         lambda env, n: provider(env, n, VCPU), inventories_of,
         lambda n: _inventories(n, 2, {})),
    Case('delete all inventories', 'DELETE',
         '/resource_providers/{rp}/inventories', None, 204,
         lambda env, n: provider(env, n, VCPU), inventories_of,
         lambda n: _inventories(n, 2, {})),
    Case('set traits', 'PUT', '/resource_providers/{rp}/traits',
         lambda n: {'resource_provider_generation': 0,
                    'traits': ['HW_CPU_X86_AVX2']}, 200,
         provider, lambda env, n: provider_state(env, n)[2],
         lambda n: _traits(n, 1, ['HW_CPU_X86_AVX2'])),
    Case('clear traits', 'DELETE', '/resource_providers/{rp}/traits', None,
         204, lambda env, n: provider(env, n, traits=['HW_CPU_X86_AVX2']),
         lambda env, n: provider_state(env, n)[2],
         lambda n: _traits(n, 2, [])),
    Case('set aggregates', 'PUT', '/resource_providers/{rp}/aggregates',
         lambda n: {'resource_provider_generation': 0,
                    'aggregates': [n.aggregate]}, 200,
         provider, lambda env, n: provider_state(env, n)[3],
         lambda n: (200, {'resource_provider_generation': 1,
                          'aggregates': [n.aggregate]})),
    Case('create a resource class', 'POST', '/resource_classes',
         lambda n: {'name': n.rc}, 201, _nothing, named_statuses,
         lambda n: _named(rc=200)),
    Case('ensure a resource class', 'PUT', '/resource_classes/{rc}', None,
         201, _nothing, named_statuses, lambda n: _named(rc=200)),
    Case('rename a resource class', 'PUT', '/resource_classes/{rc}',
         lambda n: {'name': n.rc + '_NEW'}, 200,
         lambda env, n: ok(env, 'PUT', '/resource_classes/' + n.rc),
         named_statuses, lambda n: _named(new_rc=200), version='1.6'),
    Case('delete a resource class', 'DELETE', '/resource_classes/{rc}',
         None, 204, lambda env, n: ok(env, 'PUT', '/resource_classes/' + n.rc),
         named_statuses, lambda n: _named()),
    Case('ensure a trait', 'PUT', '/traits/{trait}', None, 201, _nothing,
         named_statuses, lambda n: _named(trait=204)),
    Case('delete a trait', 'DELETE', '/traits/{trait}', None, 204,
         lambda env, n: ok(env, 'PUT', '/traits/' + n.trait),
         named_statuses, lambda n: _named()),
    Case('create a device profile', 'POST', '/device_profiles',
         lambda n: [{'name': n.profile,
                     'groups': [{'resources:FPGA': '1'}]}], 201, _nothing,
         named_statuses, lambda n: _named(profile=200), version='1.40'),
    Case('delete a device profile', 'DELETE', '/device_profiles/{profile}',
         None, 204, lambda env, n: ok(
             env, 'POST', '/device_profiles',
             [{'name': n.profile, 'groups': [{'resources:FPGA': '1'}]}],
             version='1.40'),
         named_statuses, lambda n: _named(), version='1.40'),
    Case('claim for a new project, user and type', 'PUT',
         '/allocations/{consumer}',
         lambda n: {'allocations': {n.rp: {'resources': {'VCPU': 2}}},
                    'project_id': n.project, 'user_id': n.user,
                    'consumer_generation': None,
                    'consumer_type': n.consumer_type}, 204,
         lambda env, n: provider(env, n, VCPU), allocation_state,
         lambda n: [_allocations(n, 2), {'allocations': {}}, [1, 1, 1],
                    {'resource_provider_generation': 2,
                     'usages': {'VCPU': 2}}],
         given_up=409),
    Case('claim for two consumers', 'POST', '/allocations',
         lambda n: {consumer: {
             'allocations': {n.rp: {'resources': {'VCPU': 3}}},
             'project_id': n.project, 'user_id': n.user,
             'consumer_generation': None,
             'consumer_type': n.consumer_type}
             for consumer in (n.consumer, n.other)}, 204,
         lambda env, n: provider(env, n, VCPU), allocation_state,
         lambda n: [_allocations(n, 3), _allocations(n, 3), [1, 1, 1],
                    {'resource_provider_generation': 2,
                     'usages': {'VCPU': 6}}],
         given_up=409),
    Case('release a claim', 'DELETE', '/allocations/{consumer}', None, 204,
         lambda env, n: (provider(env, n, VCPU), claim(env, n, n.consumer, 2)),
         lambda env, n: allocation_state(env, n)[0::3],
         lambda n: [{'allocations': {}},
                    {'resource_provider_generation': 2,
                     'usages': {'VCPU': 0}}],
         given_up=409),
    Case('reshape', 'POST', '/reshaper',
         lambda n: {
             'inventories': {n.rp: {'resource_provider_generation': 2,
                                    'inventories': {'VCPU': {'total': 6}}}},
             'allocations': {n.consumer: {
                 'allocations': {n.rp: {'resources': {'VCPU': 4}}},
                 'project_id': n.project, 'user_id': n.user,
                 'consumer_generation': 1,
                 'consumer_type': n.consumer_type}}}, 204,
         lambda env, n: (provider(env, n, VCPU), claim(env, n, n.consumer, 2)),
         lambda env, n: [inventories_of(env, n)[1], allocation_state(env, n)],
         lambda n: [
             (200, {'resource_provider_generation': 5, 'inventories': {
                 'VCPU': {'total': 6, 'reserved': 0, 'min_unit': 1,
                          'max_unit': 2147483647, 'step_size': 1,
                          'allocation_ratio': 1.0}}}),
             [dict(_allocations(n, 4, generation=5), consumer_generation=2),
              {'allocations': {}}, [1, 1, 1],
              {'resource_provider_generation': 5, 'usages': {'VCPU': 4}}]],
         given_up=409),
]


def _send(env, case, names):
    path = case.path.format(**vars(names))
    body = case.body(names) if case.body else None
    # Reshaping is a service's job.
    status, _headers, payload = env.request(
        case.method, path, body, version=case.version,
        headers={'x-roles': 'admin,service'})
    return status, payload


@pytest.mark.parametrize('case', CASES, ids=[case.name for case in CASES])
def test_write_retried_in_fresh_transactions(env, backend, case,
                                             monkeypatch):
    names = Names()
    case.setup(env, names)
    before = case.read(env, names)

    refusing = Refusing(backend, env.db, refusals=RETRIES + 1)
    monkeypatch.setattr(env.db, 'writer', refusing)
    status, payload = _send(env, case, names)
    assert refusing.attempts == RETRIES + 1
    assert status == case.given_up, payload
    error = payload['errors'][0]
    if case.given_up == 409:
        assert error['code'] == 'placement.concurrent_update'
    else:
        assert error['detail'] == (
            'The server is currently unavailable. Please try again at a '
            'later time.\n\n The write met concurrent writes on each of its '
            'attempts and changed nothing; retry it.  ')
    assert case.read(env, names) == before

    refusing = Refusing(backend, env.db, refusals=2)
    monkeypatch.setattr(env.db, 'writer', refusing)
    status, payload = _send(env, case, names)
    assert (status, refusing.attempts) == (case.status, 3), payload
    assert case.read(env, names) == case.after(names)


def test_standard_names_sync_retried(env, backend, monkeypatch):
    """The standard names a start adds (here a trait an operator removed)
    are added by a write like any other."""
    with env.db.writer() as conn:
        conn.execute(tables.traits.delete().where(
            tables.traits.c.name == 'HW_CPU_X86_SSE42'))
    assert standard_names.missing(env.db) == ([], ['HW_CPU_X86_SSE42'])
    refusing = Refusing(backend, env.db, refusals=2)
    monkeypatch.setattr(env.db, 'writer', refusing)
    standard_names.ensure_synced(env.db)
    assert refusing.attempts == 3
    assert standard_names.missing(env.db) == ([], [])


def _raised(error, during=None):
    """``error`` as raised, while handling ``during`` if given."""
    try:
        if during is None:
            raise error
        try:
            raise during
        except type(during):
            raise error
    except type(error) as raised:
        return raised


def test_a_savepoint_gone_with_its_refused_transaction_is_a_conflict():
    """MariaDB ends the whole transaction on a deadlock (on Galera, a
    certification conflict), its savepoints with it: rolling back to the
    savepoint a refused statement ran in then fails (1305). That failure,
    raised while the refusal was handled, is a conflict to try again (a
    claim answered 500 on Galera before); alone it is not."""
    def refused():
        return sa.exc.OperationalError('UPDATE resource_providers', {},
                                       pymysql.err.OperationalError(
                                           1213, 'Deadlock found'))

    def gone():
        return sa.exc.OperationalError(
            'ROLLBACK TO SAVEPOINT sa_savepoint_1', {},
            pymysql.err.OperationalError(1305, 'SAVEPOINT does not exist'))

    assert db_api.is_conflict(_raised(gone(), during=refused()))
    assert not db_api.is_conflict(_raised(gone()))
