"""A pooled PostgreSQL connection is never used by a process it was not
opened in.

A WSGI server that builds the application and then forks its workers
would otherwise let them share the parent's sockets: two processes
reading one connection get each other's rows. (SQLite keeps no pool: every
transaction opens its own connection.)
"""

import os

from tests import harness


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
