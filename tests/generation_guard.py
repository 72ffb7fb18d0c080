"""A guard, installed for every test (see conftest.py): a transaction that
writes what a provider has must bump that provider's generation.

Each process keeps every provider's stock (its inventories and traits)
while the provider's generation is unchanged (placement_lite.db.cloud), so
a write of those rows that leaves the generation alone leaves candidates
stale in long-running processes. The db write functions bump it
themselves; this guard catches any other path (a new route, an admin
command, a test helper) that forgets to.

Rule, checked when a transaction commits: every provider whose rows in a
table of STOCK_TABLES were inserted, updated or deleted must, in the same
transaction, have had its generation changed, or have been created or
deleted (a new provider has no kept stock; a deleted one is never looked
up again).

Every other table of the schema is named in SEEN_BY, with what a process
compares to see a write of it (made by placement_lite or by another
service on the same database, such as the reference during a takeover).

Aggregate membership is deliberately not guarded: before microversion
1.19 the reference changes it without bumping the generation, and
placement_lite does the same. That is safe only because nothing kept
between requests depends on membership (the candidates engine reads it per
request); a cache that ever keeps it must key on something else, or the
unversioned write must start bumping and the table join STOCK_TABLES.
"""

import weakref

import sqlalchemy as sa
from sqlalchemy import event

from placement_lite.db import tables

#: The tables whose rows make up a provider's kept stock.
STOCK_TABLES = frozenset({'inventories', 'resource_provider_traits'})
#: How a process sees a write of each table of the schema, made by any
#: service on the database (docs/architecture.md, "Which writes a cache
#: must see"): what the caches holding the table's rows compare. A table
#: added to the schema must be added here (tests/test_generation_guard.py
#: fails otherwise): someone has to decide how the caches see its writes.
SEEN_BY = {
    'inventories': 'the provider generation, bumped in the same '
                   'transaction (this guard); on PostgreSQL with a '
                   'transaction logged in placement_lite_structure_writes '
                   'since the last read',
    'resource_provider_traits': 'the provider generation, bumped in the '
                                'same transaction (this guard); on '
                                'PostgreSQL with a transaction logged in '
                                'placement_lite_structure_writes since '
                                'the last read',
    'resource_providers': "each request's state line of every provider it "
                          'reads (id, parent, root, generation; the '
                          'creation time on SQLite), or on PostgreSQL '
                          'those of the providers logged as written since '
                          '(placement_lite_provider_writes)',
    'allocations': "each request's sums of usage of every provider it "
                   'reads (on PostgreSQL, of the providers logged as '
                   'written since): usage is never kept past them',
    'placement_lite_provider_writes': 'nothing: no cache keeps it (it is '
                                      'what PostgreSQL processes read to '
                                      'see writes of the two above)',
    'placement_lite_structure_writes': 'nothing: no cache keeps it (it is '
                                       'what PostgreSQL processes read to '
                                       'see writes of what they derive)',
    'resource_classes': 'the class names each candidates request reads: '
                        'kept summaries made under other names are dropped',
    'traits': 'nothing: stocks keep trait names, and a trait a provider '
              'has cannot be deleted (nor renamed)',
    'placement_aggregates': 'read by each request; kept only while nothing '
                            'has committed since (a cloud at rest), or on '
                            'PostgreSQL while no transaction logged in '
                            'placement_lite_structure_writes wrote it',
    'resource_provider_aggregates': 'read by each request; kept only while '
                                    'nothing has committed since (on '
                                    'PostgreSQL, while no transaction '
                                    'logged in '
                                    'placement_lite_structure_writes '
                                    'wrote it)',
    'consumers': 'nothing: no cache keeps it',
    'projects': 'nothing: no cache keeps it',
    'users': 'nothing: no cache keeps it',
    'consumer_types': 'nothing: no cache keeps it',
    'device_profiles': 'nothing: no cache keeps it',
}
PROVIDERS = 'resource_providers'
#: {Connection: _Transaction} of the transactions under way. (Not in
#: Connection.info: that reaches for the database connection, which a
#: rollback after a lost connection must not.)
_OPEN = weakref.WeakKeyDictionary()


class UnbumpedWrite(AssertionError):
    """A transaction wrote a provider's stock without bumping its
    generation."""


#: Messages of every UnbumpedWrite raised in this process, for tests whose
#: app turned the exception into a 500 (see conftest.py).
caught = []


def install():
    """Watch every engine of the process (idempotent)."""
    engine = sa.engine.Engine
    for name, listener in (('begin', _reset), ('rollback', _reset),
                           ('before_execute', _before_execute),
                           ('after_execute', _after_execute),
                           ('commit', _check)):
        if not event.contains(engine, name, listener):
            event.listen(engine, name, listener)


class _Transaction:
    """What one transaction wrote and which providers' generations it
    changed."""

    def __init__(self):
        #: {provider id: name of a stock table written}
        self.written = {}
        #: Providers created, deleted or whose generation changed.
        self.accounted = set()
        #: {statement: rows read before it ran} for after_execute.
        self.before = {}


def _state(conn):
    state = _OPEN.get(conn)
    if state is None:
        state = _OPEN[conn] = _Transaction()
    return state


def _reset(conn):
    _OPEN.pop(conn, None)


def _table_of(statement):
    """The name of the service's table ``statement`` writes, or None. A
    migration's statements, on lightweight tables of its own (0004 rewrites
    MySQL's ratios), are not watched: they run before any process serves."""
    if isinstance(statement, (sa.Insert, sa.Update, sa.Delete)) and (
            statement.table is tables.metadata.tables.get(
                statement.table.name)):
        return statement.table.name
    return None


def _matching(conn, statement, columns, params):
    """Rows of ``columns`` that the where clause of the update or delete
    ``statement`` matches now."""
    query = sa.select(*columns)
    if statement.whereclause is not None:
        query = query.where(statement.whereclause)
    else:
        query = query.select_from(statement.table)
    return conn.execute(query, params).all()


def _before_execute(conn, statement, multiparams, params,
                    execution_options):
    table = _table_of(statement)
    if table is None or isinstance(statement, sa.Insert):
        return
    columns = statement.table.c
    if table in STOCK_TABLES:
        watched = [columns.resource_provider_id]
    elif table == PROVIDERS:
        watched = [columns.id, columns.generation]
    else:
        return
    # An executemany (db.bulk on MySQL) matches rows with each parameter set.
    _state(conn).before[statement] = [
        row for each in (multiparams or [params])
        for row in _matching(conn, statement, watched, each)]


def _after_execute(conn, statement, multiparams, params, execution_options,
                   result):
    table = _table_of(statement)
    if table not in STOCK_TABLES and table != PROVIDERS:
        return
    state = _state(conn)
    before = state.before.pop(statement, [])
    if table in STOCK_TABLES:
        if isinstance(statement, sa.Insert) and statement.select is not None:
            # INSERT ... SELECT (db.bulk): the rows the select made, its
            # values bound as the insert's.
            inserted = statement.select.subquery()
            ids = conn.execute(sa.select(inserted.c.resource_provider_id),
                               params).scalars().all()
        elif isinstance(statement, sa.Insert):
            ids = [row['resource_provider_id']
                   for row in result.context.compiled_parameters]
        else:
            ids = [provider_id for provider_id, in before]
        for provider_id in ids:
            state.written.setdefault(provider_id, table)
    elif isinstance(statement, sa.Insert) and statement.select is not None:
        # INSERT ... SELECT of providers with their ids (tests/bench/builder.py).
        state.accounted.update(conn.execute(sa.select(
            statement.select.subquery().c.id), params).scalars())
    elif isinstance(statement, sa.Insert):
        state.accounted.update(
            row[0] for row in result.inserted_primary_key_rows)
    elif isinstance(statement, sa.Delete):
        state.accounted.update(provider_id for provider_id, _g in before)
    elif before:
        rp = statement.table
        now = dict(conn.execute(
            sa.select(rp.c.id, rp.c.generation)
            .where(rp.c.id.in_([provider_id for provider_id, _g in before])))
            .all())
        state.accounted.update(provider_id for provider_id, generation
                               in before if now.get(provider_id) != generation)


def _check(conn):
    state = _OPEN.pop(conn, None)
    if state is None:
        return
    unbumped = sorted(set(state.written) - state.accounted)
    if unbumped:
        message = ('rows of %s written without bumping the generation of '
                   'provider(s) %s in the same transaction' % (
                       ', '.join(sorted({state.written[p]
                                         for p in unbumped})),
                       ', '.join(map(str, unbumped))))
        caught.append(message)
        raise UnbumpedWrite(message)
