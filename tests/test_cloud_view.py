"""What one allocation-candidates request reads (its db.cloud.View) into what the
process keeps (db.cloud): stocks are read once per process and again
after a change or a replacement; the
resources summaries show follow usage; a provider deleted while a request
reads it is left out; windows after one with few holders of the classes
asked for read only the holders, and a last window holding most of the
cloud is cut out of a whole-cloud read; nothing read is left in a
reference cycle."""

import collections
import gc

import pytest
import sqlalchemy as sa

from placement_lite import engine
from placement_lite.db import cloud
from placement_lite.db import tables
from placement_lite.db.cloud import reads
from placement_lite.db.cloud import summaries
from placement_lite.engine import windows as windows_of
from placement_lite.handlers import candidates_answer
from tests import candidate_worlds as worlds
from tests import harness

U = worlds.uuid_of


@pytest.fixture
def statements(environment):
    """Each SQL statement run, in order."""
    read = []

    @sa.event.listens_for(environment.db.read_engine, 'before_cursor_execute')
    def record(_conn, _cursor, statement, _params, _context, _many):
        read.append(statement)

    yield read
    sa.event.remove(environment.db.read_engine, 'before_cursor_execute', record)


def _create_host(env, name, vcpus):
    status, _h, body = env.request('POST', '/resource_providers',
                                   {'name': name, 'uuid': U(name)},
                                   version='1.20')
    assert status == 200, body
    _put_inventories(env, name, vcpus, generation=0)


def _put_inventories(env, name, vcpus, generation):
    status, _h, body = env.request(
        'PUT', '/resource_providers/%s/inventories' % U(name),
        {'resource_provider_generation': generation,
         'inventories': {'VCPU': {'total': vcpus},
                         'DISK_GB': {'total': 100}}})
    assert status == 200, body


def _request(env, method, path, body=None, version='1.39', expect=200):
    status, _headers, answer = env.request(method, path, body,
                                           version=version)
    assert status == expect, answer
    return answer


def _delete(env, path):
    _request(env, 'DELETE', path, expect=204)


def _vcpu_capacities(env):
    body = worlds.candidates(env, 'resources=VCPU:1,DISK_GB:10')
    return {uuid: summary['resources']['VCPU']['capacity']
            for uuid, summary in body['provider_summaries'].items()}


def _inventory_reads(statements):
    """Reads of providers' inventories (not the first statement of a
    search, which reads only the largest unit of each class asked for)."""
    return [s for s in statements if 'FROM inventories' in s
            and 'inventories AS largest' not in s]


def test_kept_stocks_are_read_once_and_again_after_a_change(
        environment, statements):
    _create_host(environment, 'cn1', 4)
    _create_host(environment, 'cn2', 8)
    statements.clear()
    assert _vcpu_capacities(environment) == {U('cn1'): 4, U('cn2'): 8}
    assert len(_inventory_reads(statements)) == 1
    statements.clear()
    assert _vcpu_capacities(environment) == {U('cn1'): 4, U('cn2'): 8}
    assert _inventory_reads(statements) == []
    _put_inventories(environment, 'cn2', 16, generation=1)
    statements.clear()
    assert _vcpu_capacities(environment) == {U('cn1'): 4, U('cn2'): 16}
    assert len(_inventory_reads(statements)) == 1


@pytest.mark.parametrize('warm', [True, False])
def test_an_application_built_warm_reads_no_stock_when_it_first_serves(
        environment, monkeypatch, warm):
    """With [placement] warm_caches_on_start (the default) the application
    reads every provider while it is built, and makes and renders their
    summaries, so its first candidates request reads no provider's
    inventories and shows the summaries made at start-up; without, that
    request reads, makes and renders them."""
    _create_host(environment, 'cn1', 4)
    _create_host(environment, 'cn2', 8)
    built = harness.Environment(
        environment.backend, database_url=environment.db.url,
        **{'placement.warm_caches_on_start': warm})
    read = []
    made = []

    def record(_conn, _cursor, statement, *_args):
        read.append(statement)

    real_summary = summaries.Shown.summary

    def summary(self, row):
        made.append(row)
        return real_summary(self, row)

    real_member = candidates_answer._member

    def member(summary, shape):
        made.append(summary.uuid)
        return real_member(summary, shape)

    monkeypatch.setattr(summaries.Shown, 'summary', summary)
    monkeypatch.setattr(candidates_answer, '_member', member)
    sa.event.listen(built.db.read_engine, 'before_cursor_execute', record)
    try:
        assert _vcpu_capacities(built) == {U('cn1'): 4, U('cn2'): 8}
    finally:
        sa.event.remove(built.db.read_engine, 'before_cursor_execute',
                        record)
        built.close()
    assert len(_inventory_reads(read)) == (0 if warm else 1)
    assert len(made) == (0 if warm else 4)


def _record_restocked(monkeypatch):
    """How many providers' stocks each read reads, in order."""
    restocked = []
    real = reads._restock

    def recording(conn, store, stale, scope_of_trees):
        restocked.append(len(stale.ids))
        return real(conn, store, stale, scope_of_trees)

    monkeypatch.setattr(reads, '_restock', recording)
    return restocked


def test_whole_cloud_reads_place_again_only_changed_providers(
        environment, monkeypatch):
    """Each whole-cloud read patches what the process keeps: in a cloud at
    rest nothing; otherwise providers whose state row is unchanged keep
    their stock, changed ones are read again, deleted ones dropped."""
    _create_host(environment, 'cn1', 4)
    _create_host(environment, 'cn2', 8)
    placed = _record_restocked(monkeypatch)
    store = cloud.of(environment.db.read_engine).store
    assert _vcpu_capacities(environment) == {U('cn1'): 4, U('cn2'): 8}
    usage = store.versions.usage
    assert _vcpu_capacities(environment) == {U('cn1'): 4, U('cn2'): 8}
    assert placed == [2]
    # Nothing changed: what is kept serves as it is.
    assert store.versions.usage == usage
    _put_inventories(environment, 'cn2', 16, generation=1)
    assert _vcpu_capacities(environment) == {U('cn1'): 4, U('cn2'): 16}
    assert placed == [2, 1]
    _delete(environment, '/resource_providers/%s' % U('cn1'))
    assert _vcpu_capacities(environment) == {U('cn2'): 16}
    assert placed == [2, 1]
    _create_host(environment, 'cn3', 2)
    assert _vcpu_capacities(environment) == {U('cn2'): 16, U('cn3'): 2}
    assert placed == [2, 1, 1]


@pytest.mark.only_backends('postgresql')
def test_a_cloud_at_rest_is_not_read_again_on_postgresql(environment,
                                                         statements):
    """While no transaction has committed since the last whole-cloud read
    (the same pg_current_snapshot()), the next request reads nothing of
    the cloud; any commit, even to another table, makes it read again."""
    _create_host(environment, 'cn1', 4)
    _create_host(environment, 'cn2', 8)

    def cloud_reads():
        return [s for s in statements if 'string_agg' in s]

    assert _vcpu_capacities(environment) == {U('cn1'): 4, U('cn2'): 8}
    assert len(cloud_reads()) == 1
    store = cloud.of(environment.db.read_engine).store
    usage = store.versions.usage
    assert _vcpu_capacities(environment) == {U('cn1'): 4, U('cn2'): 8}
    assert len(cloud_reads()) == 1
    assert store.versions.usage == usage

    _request(environment, 'PUT', '/traits/CUSTOM_ELSEWHERE', expect=201)
    assert _vcpu_capacities(environment) == {U('cn1'): 4, U('cn2'): 8}
    assert len(cloud_reads()) == 2
    _put_inventories(environment, 'cn2', 16, generation=1)
    assert _vcpu_capacities(environment) == {U('cn1'): 4, U('cn2'): 16}
    assert len(cloud_reads()) == 3


@pytest.mark.only_backends('postgresql')
def test_a_whole_cloud_read_is_brought_up_to_date_from_rows_written(
        environment, statements, monkeypatch):
    """On PostgreSQL the whole cloud's read is brought up to date from
    the providers logged as written since (one statement, no line of an
    unchanged provider read), after writes of every kind, deletions and
    writes of another service included; from every line again once the
    read is older than the log keeps. Each answer equals a fresh
    process's."""
    for name, vcpus in (('cn1', 4), ('cn2', 8), ('cn3', 2)):
        _create_host(environment, name, vcpus)

    def claim(consumer, name, vcpus):
        _request(environment, 'PUT', '/allocations/%s' % U(consumer),
                 {'allocations': {U(name): {'resources': {'VCPU': vcpus}}},
                  'project_id': U('p'), 'user_id': U('u'),
                  'consumer_generation': None}, version='1.28', expect=204)

    def vcpus():
        """{host: (VCPU capacity, VCPU used)} of the candidates' summaries."""
        body = worlds.candidates(environment, 'resources=VCPU:1,DISK_GB:10')
        return {uuid: (summary['resources']['VCPU']['capacity'],
                       summary['resources']['VCPU']['used'])
                for uuid, summary in body['provider_summaries'].items()}

    def read_after(change):
        change()
        del statements[:]
        answer = vcpus()
        cloud_reads = [s for s in statements if 'string_agg' in s]
        cloud.forget(environment.db.read_engine)
        assert answer == vcpus()
        return answer, ['written since' if tables.PROVIDER_WRITES in s
                        else 'every line' for s in cloud_reads]

    def delete_as_another_service(consumer):
        with environment.db.writer() as conn:
            conn.execute(tables.allocations.delete().where(
                tables.allocations.c.consumer_id == U(consumer)))

    vcpus()
    assert read_after(lambda: claim('c1', 'cn1', 3)) == (
        {U('cn1'): (4, 3), U('cn2'): (8, 0), U('cn3'): (2, 0)},
        ['written since'])
    assert read_after(lambda: _put_inventories(environment, 'cn2', 16, 1)) == (
        {U('cn1'): (4, 3), U('cn2'): (16, 0), U('cn3'): (2, 0)},
        ['written since'])
    assert read_after(lambda: _delete(environment, '/allocations/%s'
                                      % U('c1'))) == (
        {U('cn1'): (4, 0), U('cn2'): (16, 0), U('cn3'): (2, 0)},
        ['written since'])
    assert read_after(lambda: _delete(environment, '/resource_providers/%s'
                                      % U('cn3'))) == (
        {U('cn1'): (4, 0), U('cn2'): (16, 0)}, ['written since'])
    assert read_after(lambda: claim('c2', 'cn2', 5)) == (
        {U('cn1'): (4, 0), U('cn2'): (16, 5)}, ['written since'])
    assert read_after(lambda: delete_as_another_service('c2')) == (
        {U('cn1'): (4, 0), U('cn2'): (16, 0)}, ['written since'])
    monkeypatch.setattr(reads, 'MOST_TRANSACTIONS_SINCE', 0)
    assert read_after(lambda: claim('c3', 'cn1', 1)) == (
        {U('cn1'): (4, 1), U('cn2'): (16, 0)},
        ['written since', 'every line'])


@pytest.mark.only_backends('postgresql')
def test_stocks_stay_while_only_allocations_moved_generations(
        environment, monkeypatch):
    """On PostgreSQL a provider whose generation moved keeps its stock
    while no transaction since the last read wrote what providers are
    (logged by migration 0007's triggers): a claim, or allocations another
    service writes, are read as usage alone. Once an inventory was written
    (here straight into the database, as another service writes it), every
    provider whose generation moved has its stock read again. Each answer
    is the one a process that kept nothing gives."""
    for name, vcpus in (('cn1', 4), ('cn2', 8)):
        _create_host(environment, name, vcpus)
    restocked = _record_restocked(monkeypatch)
    rp = tables.resource_providers

    def vcpus():
        """{host: (VCPU capacity, VCPU used)} of the candidates' summaries."""
        body = worlds.candidates(environment, 'resources=VCPU:1,DISK_GB:10')
        return {uuid: (summary['resources']['VCPU']['capacity'],
                       summary['resources']['VCPU']['used'])
                for uuid, summary in body['provider_summaries'].items()}

    def read_after(*changes):
        """The answer after ``changes``, how many stocks each read read,
        and then a fresh process's answer (kept for the next change)."""
        for change in changes:
            change()
        del restocked[:]
        answer, read = vcpus(), list(restocked)
        cloud.forget(environment.db.read_engine)
        assert vcpus() == answer
        return answer, read

    def claim(consumer, name, vcpus):
        _request(environment, 'PUT', '/allocations/%s' % U(consumer),
                 {'allocations': {U(name): {'resources': {'VCPU': vcpus}}},
                  'project_id': U('p'), 'user_id': U('u'),
                  'consumer_generation': None}, version='1.28', expect=204)

    def as_another_service(name, write):
        with environment.db.writer() as conn:
            provider = conn.execute(sa.select(rp.c.id).where(
                rp.c.uuid == U(name))).scalar()
            write(conn, provider)
            conn.execute(rp.update().where(rp.c.id == provider).values(
                generation=rp.c.generation + 1))

    def allocate(conn, provider):
        conn.execute(tables.allocations.insert().values(
            resource_provider_id=provider, resource_class_id=0,
            consumer_id=U('other'), used=2))

    def grow(conn, provider):
        inventories = tables.inventories
        conn.execute(inventories.update().where(
            inventories.c.resource_provider_id == provider,
            inventories.c.resource_class_id == 0).values(total=16))

    vcpus()
    assert read_after(lambda: claim('c1', 'cn1', 2)) == (
        {U('cn1'): (4, 2), U('cn2'): (8, 0)}, [])
    assert read_after(lambda: as_another_service('cn2', allocate)) == (
        {U('cn1'): (4, 2), U('cn2'): (8, 2)}, [])
    assert read_after(lambda: claim('c2', 'cn1', 1),
                      lambda: as_another_service('cn2', grow)) == (
        {U('cn1'): (4, 3), U('cn2'): (16, 2)}, [2])
    assert read_after(lambda: claim('c3', 'cn2', 4)) == (
        {U('cn1'): (4, 3), U('cn2'): (16, 6)}, [])


@pytest.mark.only_backends('postgresql')
@pytest.mark.parametrize('searched, first, second', [
    ('every tree', 'cn1', 'cn2'),
    ('some trees', 'cn2', 'cn3')])
def test_windows_are_cut_from_a_cloud_at_rest(environment, statements,
                                              monkeypatch, searched, first,
                                              second):
    """While nothing has committed since the whole cloud was read, a
    window of trees (a range of them, or some trees: the few that could
    serve) is cut from that read instead of read; after a commit it is
    read. Either way the answer is the one a process that kept nothing
    gives."""
    monkeypatch.setattr(windows_of, 'WINDOW_MIN', 1)
    worlds.search_windows_of_every_tree(monkeypatch)
    if searched == 'some trees':
        rp = tables.resource_providers
        # As if the few holders of a class asked for were read (a bounded
        # search reads them).
        monkeypatch.setattr(
            engine.search.Searcher, 'few_trees',
            lambda self, read_holders=True: sorted(self.view.conn.execute(
                sa.select(rp.c.id).where(rp.c.name.in_(
                    ['cn2', 'cn3', 'cn4']))).scalars())
            if read_holders else None)
    for name, vcpus in (('cn1', 4), ('cn2', 8), ('cn3', 2), ('cn4', 6)):
        _create_host(environment, name, vcpus)
    query = 'resources=VCPU:1,DISK_GB:10&limit=1'
    read_engine = environment.db.read_engine

    def state_reads():
        """Reads of the whole cloud, and of windows."""
        return (len([s for s in statements if 'string_agg' in s]),
                len([s for s in statements if 'FROM allocations' in s
                     and 'string_agg' not in s]))

    def chosen(body):
        return [set(r['allocations']) for r in body['allocation_requests']]

    def forget_reads():
        cloud.forget(read_engine)

    def fresh_answer():
        """The answer of a process that kept nothing, which leaves
        nothing kept."""
        forget_reads()
        answer = worlds.candidates(environment, query)
        forget_reads()
        return answer

    def cut_at_rest():
        worlds.candidates(environment, 'resources=VCPU:1')
        statements.clear()
        cut = worlds.candidates(environment, query)
        assert state_reads() == (0, 0)
        return cut

    cut = cut_at_rest()
    assert chosen(cut) == [{U(first)}]
    assert cut == fresh_answer()

    assert cut_at_rest() == cut
    _request(environment, 'PUT', '/allocations/%s' % U('c1'),
             {'allocations': {U(first): {'resources': {'DISK_GB': 100}}},
              'project_id': U('p'), 'user_id': U('u'),
              'consumer_generation': None}, version='1.28', expect=204)
    statements.clear()
    read = worlds.candidates(environment, query)
    assert state_reads()[0] == 0 and state_reads()[1] >= 1
    assert chosen(read) == [{U(second)}]
    assert read == fresh_answer()


SHARED_AT_REST = (
    [{'name': 'h%d' % i, 'inventories': {'VCPU': 4},
      'aggregates': ['a'] if i in (2, 3) else []} for i in range(1, 5)]
    + [{'name': 'h3-gpu', 'parent': 'h3', 'inventories': {'VGPU': 1}},
       {'name': 'pool', 'inventories': {'DISK_GB': 100},
        'traits': ['MISC_SHARES_VIA_AGGREGATE'], 'aggregates': ['a']}])


@pytest.mark.only_backends('postgresql')
def test_a_cloud_at_rest_gives_sharing_and_holders_from_its_read(
        environment, statements, monkeypatch):
    """While nothing has committed since the whole cloud was read, the
    trees sharing providers serve (found once for that read), the holders
    of a class and a tree named by in_tree come from it, not from the
    database, and the providers in the aggregates member_of names are
    read once; after a commit they are read again. Either way the answer
    is the one a process that kept nothing gives."""
    monkeypatch.setattr(windows_of, 'WINDOW_MIN', 1)
    worlds.load_into_db(environment.db, SHARED_AT_REST)
    read_engine = environment.db.read_engine
    windows = worlds.record_windows(monkeypatch)
    sharing = 'resources=VCPU:1,DISK_GB:10&limit=2'
    rare = 'resources=VCPU:1,VGPU:1&limit=5'
    one_tree = 'resources=VCPU:1&in_tree=%s' % U('h3')
    member = 'resources=VCPU:1&member_of=%s' % U('a')

    def database_reads():
        return [s for s in statements
                if 'resource_provider_aggregates' in s
                or 'FROM allocations' in s
                or 'FROM inventories' in s and 'largest' not in s]

    def answers():
        return [worlds.candidates(environment, query)
                for query in (sharing, rare, one_tree, member)]

    def fresh_answers():
        cloud.forget(read_engine)
        return answers()

    def chosen(body):
        return [set(r['allocations']) for r in body['allocation_requests']]

    worlds.candidates(environment, 'resources=VCPU:1')
    answers()
    statements.clear()
    at_rest = answers()
    assert database_reads() == []
    assert any(windows), 'no window was searched'
    assert [chosen(body) for body in at_rest] == [
        [{U('h2'), U('pool')}, {U('h3'), U('pool')}],
        [{U('h3'), U('h3-gpu')}], [{U('h3')}], [{U('h2')}, {U('h3')}]]
    assert at_rest == fresh_answers()

    def set_aggregates(name, aggregates):
        provider = _request(environment, 'GET',
                            '/resource_providers/%s' % U(name))
        _request(environment, 'PUT', '/resource_providers/%s/aggregates'
                 % U(name), {'aggregates': aggregates,
                             'resource_provider_generation':
                             provider['generation']}, version='1.19')

    worlds.candidates(environment, 'resources=VCPU:1')
    set_aggregates('h2', [])
    set_aggregates('h4', [U('a')])
    statements.clear()
    moved = answers()
    assert database_reads() != []
    assert chosen(moved[0]) == [{U('h3'), U('pool')}, {U('h4'), U('pool')}]
    assert chosen(moved[3]) == [{U('h3')}, {U('h4')}]
    assert moved == fresh_answers()


@pytest.mark.only_backends('postgresql')
def test_what_is_derived_holds_while_only_allocations_are_written(
        environment, statements, monkeypatch):
    """On PostgreSQL the trees sharing providers serve and the providers
    in the aggregates member_of names are read once, and again only after
    a transaction wrote what providers are (logged by migration 0007's
    triggers): claims and their deletion leave them; a membership written
    straight into the database, as the reference writes it before 1.19
    (no generation bumped), and a trait taken away do not. Each answer is
    the one a process that kept nothing gives."""
    monkeypatch.setattr(windows_of, 'WINDOW_MIN', 1)
    ids = worlds.load_into_db(environment.db, SHARED_AT_REST)
    read_engine = environment.db.read_engine
    sharing = 'resources=VCPU:1,DISK_GB:10&limit=2'
    member = 'resources=VCPU:1&member_of=%s' % U('a')

    def answers():
        statements.clear()
        found = [worlds.candidates(environment, query)
                 for query in (sharing, member)]
        memberships_read = [s for s in statements
                            if 'resource_provider_aggregates' in s]
        return found, bool(memberships_read)

    def fresh_answers():
        cloud.forget(read_engine)
        found = answers()[0]
        answers()
        return found

    def chosen(body):
        return [set(r['allocations']) for r in body['allocation_requests']]

    def claim(consumer, name):
        _request(environment, 'PUT', '/allocations/%s' % U(consumer),
                 {'allocations': {U(name): {'resources': {'VCPU': 1}}},
                  'project_id': U('p'), 'user_id': U('u'),
                  'consumer_generation': None}, version='1.28', expect=204)

    def join_as_another_service(name, aggregate):
        aggregates = tables.placement_aggregates
        with environment.db.writer() as conn:
            aggregate_id = conn.execute(sa.select(aggregates.c.id).where(
                aggregates.c.uuid == U(aggregate))).scalar()
            conn.execute(tables.resource_provider_aggregates.insert().values(
                resource_provider_id=ids[name], aggregate_id=aggregate_id))

    def take_trait(name):
        provider = _request(environment, 'GET',
                            '/resource_providers/%s' % U(name))
        _request(environment, 'PUT', '/resource_providers/%s/traits'
                 % U(name), {'traits': [], 'resource_provider_generation':
                             provider['generation']})

    answers()
    first, read = answers()
    assert not read
    assert [chosen(body) for body in first] == [
        [{U('h2'), U('pool')}, {U('h3'), U('pool')}], [{U('h2')}, {U('h3')}]]
    for change, read_again in (
            (lambda: claim('c1', 'h2'), False),
            (lambda: _delete(environment, '/allocations/%s' % U('c1')),
             False),
            (lambda: join_as_another_service('h4', 'a'), True),
            (lambda: claim('c2', 'h3'), False),
            (lambda: take_trait('pool'), True)):
        change()
        found, read = answers()
        assert read == read_again
        assert found == fresh_answers()
    # The pool shares no more: no tree has disk of its own.
    assert [chosen(body) for body in found] == [
        [], [{U('h2')}, {U('h3')}, {U('h4')}]]


@pytest.mark.mysql
@pytest.mark.parametrize('limit, windows', [
    ('', 'whole cloud'), ('&limit=1', 'of the few trees that could serve'),
    ('&limit=1', 'of every tree')])
def test_patched_kept_reads_answer_as_fresh_ones(environment, monkeypatch,
                                                 limit, windows):
    """After each change, the answer built on the last read kept of the
    whole cloud, or of each window (of one tree at first), equals the one
    a process that kept nothing gives."""
    query = 'resources=VCPU:1,DISK_GB:10' + limit
    monkeypatch.setattr(windows_of, 'WINDOW_MIN', 1)
    if windows == 'of every tree':
        worlds.search_windows_of_every_tree(monkeypatch)

    def generation(name):
        return _request(environment, 'GET', '/resource_providers/%s'
                        % U(name))['generation']

    def claim(consumer, name, vcpus):
        _request(environment, 'PUT', '/allocations/%s' % U(consumer),
                 {'allocations': {U(name): {'resources': {'VCPU': vcpus}}},
                  'project_id': U('p'), 'user_id': U('u'),
                  'consumer_generation': None}, version='1.28', expect=204)

    def create(name, parent=None):
        body = {'name': name, 'uuid': U(name)}
        if parent:
            body['parent_provider_uuid'] = U(parent)
        _request(environment, 'POST', '/resource_providers', body,
                 version='1.20')

    def set_inventories(name, inventories):
        _request(environment, 'PUT',
                 '/resource_providers/%s/inventories' % U(name),
                 {'resource_provider_generation': generation(name),
                  'inventories': inventories})

    changes = [
        lambda: claim('c1', 'cn1', 2),
        lambda: set_inventories('cn2', {'VCPU': {'total': 16},
                                        'DISK_GB': {'total': 100}}),
        lambda: _delete(environment, '/allocations/%s' % U('c1')),
        lambda: claim('c2', 'cn2', 1),
        lambda: claim('c3', 'cn2', 1),
        lambda: _request(environment, 'PUT', '/allocations/%s' % U('c2'),
                         {'allocations': {U('cn2'): {'resources': {
                             'VCPU': 3}}}, 'project_id': U('p'),
                          'user_id': U('u'), 'consumer_generation': 1},
                         version='1.28', expect=204),
        lambda: _delete(environment, '/allocations/%s' % U('c3')),
        lambda: create('numa', parent='cn1'),
        lambda: set_inventories('numa', {'VCPU': {'total': 2}}),
        lambda: set_inventories('cn1', {'DISK_GB': {'total': 100}}),
        lambda: _request(environment, 'PUT',
                         '/resource_providers/%s' % U('numa'),
                         {'name': 'numa', 'parent_provider_uuid': U('cn2')},
                         version='1.37'),
        lambda: _delete(environment, '/resource_providers/%s' % U('numa')),
        lambda: _delete(environment, '/resource_providers/%s' % U('cn3')),
    ]
    for name, vcpus in (('cn1', 4), ('cn2', 8), ('cn3', 2)):
        _create_host(environment, name, vcpus)
    worlds.candidates(environment, query)
    read_engine = environment.db.read_engine
    for change in changes:
        change()
        patched = worlds.candidates(environment, query)
        kept = _kept_cloud(cloud.of(read_engine).store)
        cloud.forget(read_engine)
        assert patched == worlds.candidates(environment, query)
        if not limit:
            # The whole cloud read afresh is what was kept, patched.
            assert kept == _kept_cloud(cloud.of(read_engine).store)


def _kept_cloud(store):
    """{uuid: (parent id, root id, generation, inventories with usage,
    traits)} of every provider ``store`` keeps."""
    return {store.uuid(row): (
        int(store.rows.parent[row]), int(store.rows.root[row]),
        int(store.rows.generation[row]), store.inventories(row),
        store.trait_names(row)) for row in store.live_rows().tolist()}


def test_summaries_show_usage_changed_since_the_last_request(environment):
    """A provider's summary is kept between requests, but only while its
    stock and usage are unchanged."""
    _create_host(environment, 'cn1', 4)

    def vcpu_shown():
        body = worlds.candidates(environment, 'resources=VCPU:1')
        return body['provider_summaries'][U('cn1')]['resources']['VCPU']

    assert vcpu_shown() == {'capacity': 4, 'used': 0}
    _request(environment, 'PUT', '/allocations/%s' % U('consumer'),
             {'allocations': {U('cn1'): {'resources': {'VCPU': 3}}},
              'project_id': U('project'), 'user_id': U('user'),
              'consumer_generation': None}, version='1.28', expect=204)
    assert vcpu_shown() == {'capacity': 4, 'used': 3}
    # Deleting allocations leaves the provider's generation as it is.
    _delete(environment, '/allocations/%s' % U('consumer'))
    assert vcpu_shown() == {'capacity': 4, 'used': 0}


def test_a_provider_replaced_under_the_same_id_is_read_again(environment):
    """SQLite gives a deleted provider's id to the next one created, at the
    same generation: the kept stock of the first must not serve the second.
    (PostgreSQL gives a new id; the answer must be the same.)"""
    _create_host(environment, 'cn1', 4)
    assert _vcpu_capacities(environment) == {U('cn1'): 4}
    _delete(environment, '/resource_providers/%s' % U('cn1'))
    _create_host(environment, 'cn2', 8)
    assert _vcpu_capacities(environment) == {U('cn2'): 8}


def test_a_provider_deleted_while_read_is_left_out(environment,
                                                   monkeypatch):
    ids = worlds.load_into_db(environment.db, [
        {'name': 'stays', 'inventories': {'VCPU': 4}},
        {'name': 'goes', 'inventories': {'VCPU': 8}}])
    real_restock = reads._restock
    calls = collections.Counter()

    def deleting_before_first_stock_read(conn, store, stale, scope_of_trees):
        calls['restock'] += 1
        if calls['restock'] == 1:
            goes = ids['goes']
            conn.execute(tables.inventories.delete().where(
                tables.inventories.c.resource_provider_id == goes))
            # A root refers to itself: MariaDB checks that on delete.
            conn.execute(tables.resource_providers.update().where(
                tables.resource_providers.c.id == goes).values(
                root_provider_id=None))
            conn.execute(tables.resource_providers.delete().where(
                tables.resource_providers.c.id == goes))
        return real_restock(conn, store, stale, scope_of_trees)

    monkeypatch.setattr(reads, '_restock', deleting_before_first_stock_read)
    with environment.db.writer() as conn:
        read = cloud.request_view(conn)
        vcpu = {name: id_ for id_, name in read.class_names.items()}['VCPU']
        found = read.capacities({vcpu})
        shown = read.summaries({ids['stays'], ids['goes']})
    assert found == {vcpu: {ids['stays']: reads.Capacity(
        ids['stays'], 4, 0, 1, 4, 1)}}
    assert shown.items() == [(ids['stays'], summaries.ProviderSummary(
        U('stays'), None, U('stays'), (('VCPU', 4, 0),), ()))]


def _record_read_sizes(monkeypatch):
    """The number of providers each read of a request covers, in order."""
    real_scope, real_whole = reads.read_scope, reads.read_whole
    sizes = []

    def of_scope(conn, kept_cloud, scope, params, scope_of_trees):
        rows = real_scope(conn, kept_cloud, scope, params, scope_of_trees)
        sizes.append(len(rows))
        return rows

    def of_whole(conn, kept_cloud, scope_of_trees, seen_now=None):
        how = real_whole(conn, kept_cloud, scope_of_trees, seen_now)
        sizes.append(kept_cloud.store.live)
        return how

    monkeypatch.setattr(reads, 'read_scope', of_scope)
    monkeypatch.setattr(reads, 'read_whole', of_whole)
    return sizes


RARE_LATE = (
    [{'name': 'h%d' % i, 'inventories': {'VCPU': 4}} for i in range(200)]
    + [{'name': 'late', 'inventories': {'CUSTOM_RARE': 1}}])
FIRST_FULL = [{'name': 'h%d' % i, 'inventories': {'VCPU': 4},
               'used': {'VCPU': 4} if i < 150 else {}} for i in range(200)]
RARE_LATE_OF_151 = RARE_LATE[:150] + RARE_LATE[-1:]
FIRST_FULL_OF_150 = [{'name': 'h%d' % i, 'inventories': {'VCPU': 4},
                      'used': {'VCPU': 4} if i < 64 else {}}
                     for i in range(150)]


@pytest.mark.parametrize('world, resources, chosen, sizes', [
    # The first window (64 trees) is read whole and has no holder of the
    # class: later windows read only its holders (none, then 'late'), and
    # the summaries then read the tree of 'late'.
    (RARE_LATE, 'CUSTOM_RARE:1', 'late', [64, 0, 1, 1]),
    # The same when the last window holds more trees than were searched
    # before it: only its holders are read, not the whole cloud.
    (RARE_LATE_OF_151, 'CUSTOM_RARE:1', 'late', [64, 1, 1]),
    # The first window gives nothing (its hosts are full), but every
    # provider in it has VCPU: the next window (128 trees) is read whole,
    # and its trees are not read again for the summaries.
    (FIRST_FULL, 'VCPU:1', 'h150', [64, 128]),
    # The first window gives nothing; the next (128 trees asked for) is the
    # last 86, more than were searched before it: it is cut out of a read
    # of the whole cloud (150 providers), and nothing is read again for
    # the summaries.
    (FIRST_FULL_OF_150, 'VCPU:1', 'h64', [64, 150]),
], ids=['few-holders', 'few-holders-last-window-most-of-the-cloud',
         'many-holders', 'last-window-most-of-the-cloud'])
def test_windows_after_the_first_read_whole_unless_holders_are_few(
        environment, monkeypatch, world, resources, chosen, sizes):
    """limit=1 on 200 trees: the providers each Snapshot read returns."""
    worlds.load_into_db(environment.db, world)
    worlds.search_windows_of_every_tree(monkeypatch)
    read_sizes = _record_read_sizes(monkeypatch)
    body = worlds.candidates(environment,
                             'resources=%s&limit=1' % resources)
    name, amount = resources.split(':')
    assert body['allocation_requests'] == [
        {'allocations': {U(chosen): {'resources': {name: int(amount)}}},
         'mappings': {'': [U(chosen)]}}]
    assert list(body['provider_summaries']) == [U(chosen)]
    assert read_sizes == sizes


def test_a_candidates_request_leaves_no_cycles_of_its_own(environment):
    """What a request read is freed when it ends, not when the garbage
    collector next runs: none of the engine's objects is left in a
    reference cycle."""
    _create_host(environment, 'cn1', 4)
    _vcpu_capacities(environment)
    gc.collect()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        _vcpu_capacities(environment)
        gc.collect()
        ours = sorted({type(o).__qualname__ for o in gc.garbage
                       if type(o).__module__.startswith('placement_lite')})
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
    assert ours == []
