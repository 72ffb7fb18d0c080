"""Pooled PostgreSQL connections: never used by a process they were not
opened in, pinged before use once they have been idle.

A WSGI server that builds the application and then forks its workers
would otherwise let them share the parent's sockets: two processes
reading one connection get each other's rows. (SQLite keeps no pool:
every transaction opens its own connection.)
"""

import os

import pytest
import sqlalchemy as sa

from placement_lite.db import api as db_api
from tests import harness

pytestmark = pytest.mark.needs('postgresql')


def _backend_pid(db):
    with db.reader() as conn:
        return conn.exec_driver_sql('SELECT pg_backend_pid()').scalar()


def test_a_forked_child_opens_its_own_connection():
    db = harness.fresh_database('postgresql')
    try:
        parent_session = _backend_pid(db)
        reading, writing = os.pipe()
        child = os.fork()
        if child == 0:
            try:
                os.write(writing, str(_backend_pid(db)).encode())
            finally:
                os._exit(0)
        os.close(writing)
        with os.fdopen(reading) as answer:
            child_session = int(answer.read())
        os.waitpid(child, 0)
        assert child_session != parent_session
        # The child left the parent's connection open and untouched.
        assert _backend_pid(db) == parent_session
    finally:
        db.dispose()


def _end_session(pid):
    with harness.postgres_server().admin_engine().connect() as conn:
        conn.exec_driver_sql('SELECT pg_terminate_backend(%d)' % pid)


def test_an_idle_connection_is_pinged_and_replaced(monkeypatch):
    db = harness.fresh_database('postgresql')
    try:
        first = _backend_pid(db)
        _end_session(first)
        monkeypatch.setattr(db_api, 'PING_AFTER_IDLE', 0.0)
        second = _backend_pid(db)
        assert second != first
    finally:
        db.dispose()


def test_a_connection_used_a_moment_ago_is_not_pinged(monkeypatch):
    """Its failure reaches the request (the API answers 503) and empties
    the pool: the next request gets a new connection."""
    db = harness.fresh_database('postgresql')
    try:
        monkeypatch.setattr(db_api, 'PING_AFTER_IDLE', 3600.0)
        first = _backend_pid(db)
        _end_session(first)
        with pytest.raises(sa.exc.OperationalError) as failed:
            _backend_pid(db)
        assert db_api.is_unavailable(failed.value)
        assert _backend_pid(db) != first
    finally:
        db.dispose()
