"""A provider's reads on PostgreSQL run as statements each connection
prepared once (db/prepared.py): prepared the first time, run by name
after, read afresh by the database every time (what another writer
committed shows at once), prepared again on a connection the pool
opened anew, and still there after a transaction that made it rolled
back, or made by the next read when the database refused it."""

import uuid as uuidlib

import pytest
import sqlalchemy as sa

from placement_lite.db import api as db_api
from placement_lite.db import prepared
from placement_lite.db import provider_traits
from placement_lite.db import providers
from placement_lite.db import tables
from tests import harness

pytestmark = pytest.mark.needs('postgresql')

PROVIDER = str(uuidlib.UUID(int=7))


@pytest.fixture
def db():
    database = harness.fresh_database('postgresql')
    database.write(lambda conn: providers.insert_provider(
        conn, PROVIDER, 'cn1'))
    try:
        yield database
    finally:
        database.dispose()


def _prepared_here(conn):
    """The statements the connection's session has prepared, by name."""
    return set(conn.exec_driver_sql(
        'SELECT name FROM pg_prepared_statements').scalars())


def _trait_names(conn):
    generation, rows = provider_traits.of_provider_named(conn, PROVIDER)
    return generation, [row.name for row in rows]


def test_read_by_name_once_prepared_and_afresh_every_time(db):
    name = prepared._prepared(provider_traits._OF_PROVIDER_NAMED).name
    with db.reader() as conn:
        assert name not in _prepared_here(conn)
        assert _trait_names(conn) == (0, [])
        assert name in _prepared_here(conn)
        session = conn.exec_driver_sql('SELECT pg_backend_pid()').scalar()
    with db.engine.connect() as other, other.begin():
        trait_id = other.execute(
            sa.select(tables.traits.c.id)
            .where(tables.traits.c.name == 'HW_CPU_X86_AVX2')).scalar_one()
        provider_id = other.execute(
            sa.select(tables.resource_providers.c.id)
            .where(tables.resource_providers.c.uuid == PROVIDER)
        ).scalar_one()
        other.execute(tables.resource_provider_traits.insert().values(
            resource_provider_id=provider_id, trait_id=trait_id))
        other.execute(tables.resource_providers.update()
                      .where(tables.resource_providers.c.id == provider_id)
                      .values(generation=1))
    with db.reader() as conn:
        assert conn.exec_driver_sql(
            'SELECT pg_backend_pid()').scalar() == session
        assert _trait_names(conn) == (1, ['HW_CPU_X86_AVX2'])
        assert _prepared_here(conn) == {name}


def test_a_new_session_prepares_again(db, monkeypatch):
    """The pool opens a connection anew in place of one whose session
    ended (pinged on checkout): it has prepared nothing."""
    with db.reader() as conn:
        assert _trait_names(conn) == (0, [])
        session = conn.exec_driver_sql('SELECT pg_backend_pid()').scalar()
    with harness.postgres_server().admin_engine().connect() as admin:
        admin.exec_driver_sql('SELECT pg_terminate_backend(%d)' % session)
    monkeypatch.setattr(db_api, 'PING_AFTER_IDLE', 0.0)
    with db.reader() as conn:
        assert conn.exec_driver_sql(
            'SELECT pg_backend_pid()').scalar() != session
        assert _prepared_here(conn) == set()
        assert _trait_names(conn) == (0, [])


def test_prepared_in_a_transaction_rolled_back_stays(db):
    with db.engine.connect() as conn:
        with conn.begin() as transaction:
            assert _trait_names(conn) == (0, [])
            transaction.rollback()
        with conn.begin():
            assert _trait_names(conn) == (0, [])
            assert len(_prepared_here(conn)) == 1


def test_a_preparation_refused_is_made_by_the_next_read(db):
    """In a transaction an error aborted, PREPARE fails: the connection
    has not prepared the statement, and its next read prepares it."""
    with db.engine.connect() as conn:
        with conn.begin():
            with pytest.raises(sa.exc.DataError):
                conn.exec_driver_sql('SELECT 1 / 0')
            with pytest.raises(sa.exc.InternalError):
                _trait_names(conn)
        with conn.begin():
            assert _trait_names(conn) == (0, [])
            assert len(_prepared_here(conn)) == 1


def test_listings_without_filters_prepared_with_and_without_values(db):
    """The whole listing binds nothing (EXECUTE takes no list then); a
    tree's binds the uuid of one of its providers."""
    with db.reader() as conn:
        assert [row.uuid for row in providers.list_providers(conn)] == [
            PROVIDER]
        assert [row.uuid for row in providers.list_providers(
            conn, in_tree=PROVIDER)] == [PROVIDER]
        assert providers.list_providers(
            conn, in_tree=str(uuidlib.UUID(int=8))) == []
        assert len(_prepared_here(conn)) == 2


def test_rows_read_on_the_driver_are_sqlalchemy_s(db):
    """A prepared read's rows, read on the driver's cursor, hold what
    SQLAlchemy's rows of the same EXECUTE hold, by place and by name."""
    with db.reader() as conn:
        assert _trait_names(conn) == (0, [])
        statement = prepared._prepared(provider_traits._OF_PROVIDER_NAMED)
        ours = prepared._executed(conn, conn.connection.dbapi_connection,
                                  statement.execute, {'uuid': PROVIDER})
        theirs = conn.exec_driver_sql(statement.execute,
                                      {'uuid': PROVIDER}).all()
    assert [tuple(row) for row in ours] == [tuple(row) for row in theirs]
    assert ours[0]._fields == tuple(theirs[0]._fields) == (
        'provider_generation', 'id', 'name', 'created_at', 'updated_at')


def test_a_read_on_the_driver_fires_the_statement_events(db):
    """The metrics and the tests count statements by SQLAlchemy's events:
    a read on the driver's cursor is one statement, before and after."""
    seen = []
    before = lambda conn, cursor, statement, *_args: seen.append(
        ('before', statement))
    after = lambda conn, cursor, statement, *_args: seen.append(
        ('after', statement))
    sa.event.listen(db.read_engine, 'before_cursor_execute', before)
    sa.event.listen(db.read_engine, 'after_cursor_execute', after)
    try:
        with db.reader() as conn:
            _trait_names(conn)
            seen.clear()
            _trait_names(conn)
    finally:
        sa.event.remove(db.read_engine, 'before_cursor_execute', before)
        sa.event.remove(db.read_engine, 'after_cursor_execute', after)
    execute = prepared._prepared(provider_traits._OF_PROVIDER_NAMED).execute
    assert seen == [('before', execute), ('after', execute)]


def test_an_error_on_the_driver_raised_as_sqlalchemy_raises_it(db):
    """The database refusing a read (here its prepared statement dropped
    behind the pool's back) raises the error SQLAlchemy raises for the
    same statement, on a connection that stays usable."""
    statement = prepared._prepared(provider_traits._OF_PROVIDER_NAMED)
    with db.reader() as conn:
        assert _trait_names(conn) == (0, [])
        conn.exec_driver_sql('DEALLOCATE %s' % statement.name)
        with pytest.raises(sa.exc.DBAPIError) as by_sqlalchemy:
            conn.exec_driver_sql(statement.execute, {'uuid': PROVIDER})
        with pytest.raises(sa.exc.DBAPIError) as raised:
            _trait_names(conn)
        assert type(raised.value) is type(by_sqlalchemy.value)
        assert str(raised.value) == str(by_sqlalchemy.value)
        assert raised.value.orig.pgcode == '26000'
        assert not raised.value.connection_invalidated
        assert conn.exec_driver_sql('SELECT 1').scalar() == 1


def test_a_connection_lost_under_a_read_on_the_driver_empties_the_pool(db):
    """A session ended under a read: SQLAlchemy's error for a lost
    connection (a 503: unavailable), and every connection the pool held
    is opened anew, the one checked out beside it too."""
    def session(conn):
        return conn.exec_driver_sql('SELECT pg_backend_pid()').scalar()

    raised = []
    with db.reader() as beside:
        sessions = {session(beside)}
        with pytest.raises(sa.exc.DBAPIError):
            with db.reader() as conn:
                assert _trait_names(conn) == (0, [])
                sessions.add(session(conn))
                with harness.postgres_server().admin_engine().connect() as \
                        admin:
                    admin.exec_driver_sql('SELECT pg_terminate_backend(%d)'
                                          % session(conn))
                try:
                    _trait_names(conn)
                except sa.exc.DBAPIError as exc:
                    raised.append(exc)
                    raise
    assert raised[0].connection_invalidated
    assert db_api.is_unavailable(raised[0])
    with db.reader() as conn, db.reader() as beside:
        assert not {session(conn), session(beside)} & sessions
        assert _trait_names(conn) == (0, [])
