"""Reads PostgreSQL plans once per connection, not once per request.

Planning a provider's small read costs PostgreSQL four to six times what
running it does (its traits: about 350 us of the backend's CPU against
75 when prepared, at 1,000 hosts), and nearly every request nova-compute
sends all day is one such read. psycopg2 prepares nothing itself, so on
PostgreSQL a statement read through :func:`read` is prepared (``PREPARE``)
the first time a connection runs it and run by name (``EXECUTE``) from
then on: PostgreSQL plans its first five runs as it would any statement
and then keeps a generic plan unless that one is estimated costlier (a
lookup by a unique key never is). It plans again by itself when a table
the statement reads changes. A prepared statement lasts as long as its
session, whatever transaction it was made in; the pool clears a
connection's ``info``, where the names it prepared are kept, whenever it
opens a new one. Elsewhere the statement runs as it is.
"""

import functools

import psycopg2
from psycopg2 import extras
import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

#: The key, in a pooled connection's ``info``, of the names it prepared.
_PREPARED = 'placement_lite_prepared'
#: Compiles with PostgreSQL's own placeholders ($1, $2...), as PREPARE
#: takes them.
_NUMBERED = postgresql.psycopg2.dialect(paramstyle='numeric_dollar')


#: {SQL text: its name}: a statement made again (a shape dropped from a
#: cache and made anew) keeps the name it was prepared under.
_NAMES = {}


class _Prepared:
    def __init__(self, statement):
        compiled = statement.compile(dialect=_NUMBERED)
        text = str(compiled)
        self.name = _NAMES.setdefault(
            text, 'placement_lite_%d' % (len(_NAMES) + 1))
        self.prepare = 'PREPARE %s AS %s' % (self.name, text)
        self.execute = 'EXECUTE ' + self.name
        if compiled.positiontup:
            self.execute += ' (%s)' % ', '.join(
                '%%(%s)s' % name for name in compiled.positiontup)


@functools.lru_cache(maxsize=1024)
def _prepared(statement):
    return _Prepared(statement)


def read(conn, statement, params):
    """The rows ``statement`` reads with ``params``, run on PostgreSQL as
    a statement the connection prepared. Only for statements of a few
    shapes (each is prepared in every connection, for its life) whose
    plan no value bound changes much: not a capacity filter's, which
    PostgreSQL misestimates (db.providers.list_providers)."""
    if conn.dialect.name != 'postgresql':
        return conn.execute(statement, params).all()
    prepared = _prepared(statement)
    pooled = conn.connection
    names = pooled.info.setdefault(_PREPARED, set())
    if prepared.name not in names:
        # No parameters: the driver sends the text as it is. Noted once
        # it ran (PREPARE fails in a transaction an error aborted).
        conn.exec_driver_sql(prepared.prepare)
        names.add(prepared.name)
    return _executed(conn, pooled.dbapi_connection, prepared.execute, params)


def _executed(conn, driver, statement, params):
    """The rows of ``statement`` run on the driver's connection ``driver``
    of ``conn``, as named tuples (their columns by name and by place, as
    SQLAlchemy's rows).

    SQLAlchemy would make an execution context, a result and its
    metadata for a statement whose text and columns never change: about
    a sixth of a small read's CPU (docs/benchmark.md). What it does
    besides is kept: the statement events fire (the metrics and the tests
    count statements by them); an error is raised as SQLAlchemy raises
    it; a connection that was lost runs the statement again through
    SQLAlchemy, which raises what it raises for a lost connection and
    empties the pool."""
    dispatch = conn.dispatch
    try:
        with driver.cursor(cursor_factory=extras.NamedTupleCursor) as cursor:
            if dispatch.before_cursor_execute:
                dispatch.before_cursor_execute(conn, cursor, statement,
                                               params, None, False)
            cursor.execute(statement, params)
            if dispatch.after_cursor_execute:
                dispatch.after_cursor_execute(conn, cursor, statement,
                                              params, None, False)
            return cursor.fetchall()
    except psycopg2.Error as exc:
        if conn.dialect.is_disconnect(exc, driver, None):
            return conn.exec_driver_sql(statement, params).all()
        raise sa.exc.DBAPIError.instance(
            statement, params, exc, psycopg2.Error,
            hide_parameters=conn.engine.hide_parameters,
            dialect=conn.dialect) from exc
