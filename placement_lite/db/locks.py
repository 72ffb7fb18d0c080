"""Row locks that cannot deadlock with another service's writers.

During a rolling takeover the reference and placement_lite write one
database at once (docs/databases.md). The reference locks providers by
bumping their generations at the end of its transaction, in the order of
the request body; any fixed order placement_lite chose would be the
reverse of some body's, and two transactions each holding a row the other
waits for deadlock: PostgreSQL ends one after ``deadlock_timeout`` (the
reference answers that one with a 500), InnoDB at once.

So a placement_lite write never waits for a row lock while it holds one.
It locks the providers and consumers it writes all at once, without
waiting (``FOR UPDATE NOWAIT``, PostgreSQL and MariaDB); when another
transaction holds one of them the statement fails at once
(:class:`Busy`), the write is rolled back, releasing everything, and
waits for those rows to be free, one at a time, each in a statement of its
own that holds nothing else (:func:`wait_until_free`); then it runs again
(``Database.write``). A transaction waiting while it holds nothing cannot
close a cycle of waits, so no deadlock involves placement_lite, whatever
order the other service locks in; placement_lite's writers still queue
behind one another, and a claim checks capacity only once it holds its
providers.

SQLite has no row locks: its writers hold the whole database
(``BEGIN IMMEDIATE``), and ``NOWAIT`` is not rendered there.
"""

import sqlalchemy as sa

#: PostgreSQL's SQLSTATE for a row lock NOWAIT could not take.
_LOCK_NOT_AVAILABLE = '55P03'
#: MySQL/MariaDB's error number for the same (and for a lock wait timeout).
_MYSQL_LOCK_NOT_AVAILABLE = 1205


class Busy(Exception):
    """Rows a write must lock are held by another transaction: the write
    is rolled back, waits for them (wait_until_free) and runs again."""

    def __init__(self, column, values):
        super().__init__('rows of %s with %s in %s are locked by another '
                         'transaction' % (column.table.name, column.name,
                                          sorted(values)))
        #: The column the rows were asked by, and its values.
        self.column = column
        self.values = sorted(values)


def locking(query, column):
    """``query`` (a SELECT of ``column``'s table), locking the rows it
    reads without waiting for them: what lock_at_once runs."""
    return query.with_for_update(nowait=True, of=column.table)


def lock_at_once(conn, query, column, values, params=None):
    """The rows of ``query`` (made by :func:`locking`; limited to the rows
    whose ``column`` is one of ``values``, run with ``params``), locked
    until the transaction ends, all of them or none: Busy when another
    transaction holds one."""
    try:
        return conn.execute(query, params).all()
    except sa.exc.OperationalError as exc:
        if _is_lock_not_available(exc):
            raise Busy(column, values) from exc
        raise


def _is_lock_not_available(exc):
    orig = exc.orig
    if getattr(orig, 'pgcode', None) == _LOCK_NOT_AVAILABLE:
        return True
    return (type(orig).__module__.startswith('pymysql')
            and orig.args[:1] == (_MYSQL_LOCK_NOT_AVAILABLE,))


def wait_until_free(engine, busy):
    """Return once no transaction holds the rows ``busy`` names, each
    waited for by a statement of its own on ``engine`` (in autocommit),
    which holds nothing while it waits and lets the row go as it ends."""
    column = busy.column
    with engine.connect() as conn:
        for value in busy.values:
            conn.execute(sa.select(column).where(column == value)
                         .with_for_update())
