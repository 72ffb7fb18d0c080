"""Statements over many values or rows at once: what a 1 MiB body names
(tens of thousands of classes, traits, providers, consumers) goes to the
database in one statement, bound in a moment.

An expanding IN, or an executemany, makes a parameter of each value,
which SQLAlchemy and the database handle one by one (0.5 s for 50,000
names). Here, on PostgreSQL the values of a column are one parameter, an
array's text, and rows are those arrays side by side (``unnest``); on
SQLite they are one JSON document (``json_each``). MySQL and MariaDB get
the IN list and executemany: a JSON_TABLE's strings have a collation of
their own, which a database the reference created does not share.

Making a statement and its cache key costs SQLAlchemy more than running
it, for the few rows of most writes: the statements of rows (insert,
update, compare_and_bump) are made once per dialect and shape, their
values bound by name when they run; so are those callers make with
one_of_bound.
"""

import functools
import json

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

from placement_lite.db import api as db_api


def one_of(conn, column, values):
    """SQL: ``column`` is one of ``values`` (strings or integers)."""
    dialect = conn.dialect.name
    return _is_one_of(dialect, column,
                      _param(dialect, column, None, bound(conn, values)))


def one_of_bound(dialect, column, name):
    """SQL: ``column`` is one of the values bound to ``name`` when the
    statement runs (``{name: bound(conn, values)}``): for statements made
    once per dialect (making one and its cache key costs more than running
    it, for the few values of a write)."""
    return _is_one_of(dialect, column, _param(dialect, column, name))


def where_one_of(conn, query, column, values):
    """``query`` (a select from ``column``'s table), limited to the rows
    whose ``column`` is one of ``values``. On SQLite the values are joined
    to: an IN first sorts them (four times longer for 75,000 names)."""
    dialect = conn.dialect.name
    return _where_one_of(dialect, query, column,
                         _param(dialect, column, None, bound(conn, values)))


def where_one_of_bound(dialect, query, column, name):
    """where_one_of, the values bound to ``name`` as one_of_bound's."""
    return _where_one_of(dialect, query, column,
                         _param(dialect, column, name))


def bound(conn, values):
    """The value bound for ``values`` (strings or integers) to a statement
    made with one_of_bound or where_one_of_bound."""
    values = list(dict.fromkeys(values))
    dialect = conn.dialect.name
    if dialect == 'postgresql':
        return _array_text(values)
    if dialect == 'sqlite':
        return json.dumps(values)
    return values


def _param(dialect, column, name, value=None):
    """The parameter of a one_of: ``name``'s, or with ``name`` None one
    holding ``value``. On PostgreSQL the values are an array's text, on
    SQLite a JSON document; MySQL and MariaDB get an IN list."""
    if dialect == 'mysql':
        return sa.bindparam(name, value, expanding=True)
    return sa.bindparam(name, value, type_=sa.Text)


def _is_one_of(dialect, column, param):
    if dialect == 'postgresql':
        return column == sa.any_(sa.cast(param, postgresql.ARRAY(column.type)))
    if dialect == 'sqlite':
        items = sa.func.json_each(param)
        return column.in_(sa.select(items.table_valued('value').c.value))
    return column.in_(param)


def _where_one_of(dialect, query, column, param):
    if dialect != 'sqlite':
        return query.where(_is_one_of(dialect, column, param))
    items = sa.func.json_each(param).table_valued('value')
    return query.join(items, column == items.c.value)


def _array_text(values):
    """The text of a PostgreSQL array of ``values``."""
    kinds = set(map(type, values))
    if kinds <= {int}:
        items = map(str, values)
    elif kinds <= {float}:
        items = map(repr, values)
    else:
        items = ('NULL' if value is None else '"%s"' % str(value).replace(
            '\\', '\\\\').replace('"', '\\"') for value in values)
    return '{%s}' % ','.join(items)


def _rows(dialect, table, names):
    """A subquery ``r`` of rows of the columns ``names`` of ``table``,
    typed as its, bound when the statement runs (:func:`_rows_bound`)
    (PostgreSQL, SQLite)."""
    columns = [table.c[name] for name in names]
    if dialect == 'postgresql':
        return sa.func.unnest(*(
            sa.cast(sa.bindparam('rows_' + column.name, type_=sa.Text),
                    postgresql.ARRAY(column.type))
            for column in columns)).table_valued(
                *(sa.column(column.name, column.type) for column in columns)
            ).render_derived(name='r')
    items = sa.func.json_each(
        sa.bindparam('rows', type_=sa.Text)).table_valued('value')
    return sa.select(*(
        sa.type_coerce(sa.func.json_extract(items.c.value, '$[%d]' % index),
                       column.type).label(column.name)
        for index, column in enumerate(columns))).subquery('r')


def _rows_bound(conn, table, rows):
    """The parameters of a _rows subquery for ``rows`` (dicts with the
    same keys, columns of ``table``): on PostgreSQL an array's text per
    column, on SQLite one JSON document of the rows, their values as the
    columns' types store them."""
    columns = [table.c[name] for name in rows[0]]
    values = [[row[column.name] for row in rows] for column in columns]
    if conn.dialect.name == 'postgresql':
        return {'rows_' + column.name: _array_text(column_values)
                for column, column_values in zip(columns, values)}
    for index, column in enumerate(columns):
        process = column.type.dialect_impl(conn.dialect).bind_processor(
            conn.dialect)
        if process is not None:
            stored = {value: process(value) for value in set(values[index])}
            values[index] = list(map(stored.__getitem__, values[index]))
    return {'rows': json.dumps(list(zip(*values)))}


def _same(table, names, prefix):
    """{name: a parameter typed as ``table``'s column} for ``names``."""
    return {name: sa.bindparam(prefix + name, type_=table.c[name].type)
            for name in names}


def _same_bound(same, prefix):
    return {prefix + name: value for name, value in same.items()}


def insert(conn, table, rows, ignoring_duplicates=False, returning=(),
           **same):
    """Insert ``rows`` (dicts with the same columns) into ``table``, each
    with the columns ``same`` too; ``ignoring_duplicates`` skips the rows
    whose unique key another writer has just inserted (see
    api.insert_ignoring). With ``returning`` (columns of ``table``), the
    rows inserted, those columns of each, where the database can say
    (PostgreSQL, SQLite); else None."""
    if not rows:
        return [] if returning else None
    dialect = conn.dialect.name
    if dialect == 'mysql':
        statement = (db_api.insert_ignoring(conn, table)
                     if ignoring_duplicates else table.insert())
        conn.execute(statement.values(same), rows)
        return None
    returning = tuple(returning) if conn.dialect.insert_returning else ()
    result = conn.execute(
        _insert(dialect, table, tuple(rows[0]), tuple(same),
                ignoring_duplicates, returning),
        {**_rows_bound(conn, table, rows), **_same_bound(same, 'same_')})
    return result.all() if returning else None


@functools.cache
def _insert(dialect, table, names, same, ignoring_duplicates, returning):
    statement = (db_api.insert_ignoring_on(dialect, table)
                 if ignoring_duplicates else table.insert())
    given = _rows(dialect, table, names)
    # SQLite reads ON CONFLICT after a SELECT without WHERE as a join's.
    statement = statement.from_select(list(names) + list(same), sa.select(
        *(given.c[name] for name in names),
        *(param.label(name) for name, param
          in _same(table, same, 'same_').items())).where(sa.true()))
    return statement.returning(*returning) if returning else statement


def update(conn, table, rows, match, **same):
    """Update the rows of ``table`` that ``rows`` (dicts with the same
    columns) name by their columns ``match``, setting their other columns,
    and the columns ``same``."""
    if not rows:
        return
    changed = [name for name in rows[0] if name not in match]
    if conn.dialect.name == 'mysql':
        conn.execute(
            table.update()
            .where(*(table.c[name] == sa.bindparam('match_' + name)
                     for name in match))
            .values({**{name: sa.bindparam('new_' + name)
                        for name in changed}, **same}),
            [{('match_' if name in match else 'new_') + name: value
              for name, value in row.items()} for row in rows])
        return
    conn.execute(
        _update(conn.dialect.name, table, tuple(rows[0]), tuple(match),
                tuple(same)),
        {**_rows_bound(conn, table, rows), **_same_bound(same, 'same_')})


@functools.cache
def _update(dialect, table, names, match, same):
    given = _rows(dialect, table, names)
    return (table.update()
            .where(*(table.c[name] == given.c[name] for name in match))
            .values({**{name: given.c[name] for name in names
                        if name not in match},
                     **_same(table, same, 'same_')}))


def compare_and_bump(conn, table, expected, **also):
    """Add one to the ``generation`` of the rows of ``table`` whose ids
    are the keys of ``expected`` ({id: generation}), if every one is still
    at the generation expected; ``also`` sets other columns too. Whether
    they all were (when not, some may have been bumped: the caller's
    transaction must roll back)."""
    if not expected:
        return True
    if conn.dialect.name == 'mysql':
        return all(conn.execute(
            table.update()
            .where(table.c.id == row_id, table.c.generation == generation)
            .values(generation=generation + 1, **also)).rowcount == 1
            for row_id, generation in sorted(expected.items()))
    rows = [{'id': row_id, 'generation': generation}
            for row_id, generation in expected.items()]
    return conn.execute(
        _compare_and_bump(conn.dialect.name, table, tuple(also)),
        {**_rows_bound(conn, table, rows), **_same_bound(also, 'also_')}
    ).rowcount == len(expected)


@functools.cache
def _compare_and_bump(dialect, table, also):
    given = _rows(dialect, table, ('id', 'generation'))
    return (table.update()
            .where(table.c.id == given.c.id,
                   table.c.generation == given.c.generation)
            .values(generation=given.c.generation + 1,
                    **_same(table, also, 'also_')))
