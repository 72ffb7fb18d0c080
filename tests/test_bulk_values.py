"""db/bulk.py: a statement made once, its values bound when it runs
(one_of_bound, where_one_of_bound), finds the rows the same statement
made with its values finds, on every database, whatever the values'
characters."""

import datetime

import pytest
import sqlalchemy as sa

from placement_lite.db import bulk
from placement_lite.db import consumers
from placement_lite.db import tables

pytestmark = pytest.mark.mysql

PROJECTS = tables.projects
#: Names that an array's text or a JSON document must quote or escape.
ODD_NAMES = ['plain', 'with "quotes"', 'back\\slash', 'comma,brace}{',
             'NULL', "it's", 'ünïcode', '']
ABSENT = 'absent'


def _made_with_values(conn, names, joined):
    query = sa.select(PROJECTS.c.external_id, PROJECTS.c.id)
    if joined:
        query = bulk.where_one_of(conn, query, PROJECTS.c.external_id, names)
    else:
        query = query.where(bulk.one_of(conn, PROJECTS.c.external_id, names))
    return dict(conn.execute(query).all())


def _made_once(conn, names, joined):
    dialect = conn.dialect.name
    query = sa.select(PROJECTS.c.external_id, PROJECTS.c.id)
    if joined:
        query = bulk.where_one_of_bound(dialect, query,
                                        PROJECTS.c.external_id, 'names')
    else:
        query = query.where(bulk.one_of_bound(dialect,
                                              PROJECTS.c.external_id,
                                              'names'))
    return dict(conn.execute(query, {'names': bulk.bound(conn, names)}).all())


@pytest.mark.parametrize('joined', [False, True])
def test_values_bound_when_run_find_what_values_made_in_find(environment,
                                                             joined):
    with environment.db.writer() as conn:
        created, _users, _types = consumers.owner_ids(conn, ODD_NAMES, [], [])
    assert sorted(created) == sorted(ODD_NAMES)
    asked = [ABSENT, *ODD_NAMES, ODD_NAMES[0]]
    with environment.db.reader() as conn:
        assert _made_with_values(conn, asked, joined) == created
        assert _made_once(conn, asked, joined) == created
        assert _made_once(conn, [ABSENT], joined) == {}
        assert _made_once(conn, ODD_NAMES[1:3], joined) == {
            name: created[name] for name in ODD_NAMES[1:3]}


def test_rows_bound_when_run_are_written_as_given(environment):
    """The same insert, update and compare-and-bump, made once, write the
    rows each call gives (a second call's values, not the first's)."""
    when = [datetime.datetime(2026, 1, 2, 3, 4, 5),
            datetime.datetime(2026, 6, 7, 8, 9, 10)]
    consumer_rows = tables.consumers
    with environment.db.writer() as conn:
        project, user, _types = consumers.owner_ids(conn, ['p'], ['u', 'v'],
                                                    [])
        ids = {}
        for batch, names in enumerate((ODD_NAMES[:4], ODD_NAMES[4:])):
            created = bulk.insert(
                conn, consumer_rows,
                [{'uuid': name, 'project_id': project['p'],
                  'user_id': user['u']} for name in names],
                returning=(consumer_rows.c.uuid, consumer_rows.c.id),
                generation=batch, created_at=when[batch])
            ids.update(dict(created) if created is not None else dict(
                conn.execute(sa.select(consumer_rows.c.uuid,
                                       consumer_rows.c.id)).all()))
        assert sorted(ids) == sorted(ODD_NAMES)
        bulk.update(conn, consumer_rows,
                    [{'id': ids[name], 'user_id': user['v']}
                     for name in ODD_NAMES[:2]], ('id',),
                    updated_at=when[1])
        assert bulk.compare_and_bump(
            conn, consumer_rows, {ids[name]: 1 for name in ODD_NAMES[4:]},
            updated_at=when[0])
        assert not bulk.compare_and_bump(
            conn, consumer_rows, {ids[ODD_NAMES[0]]: 1}, updated_at=when[0])
        written = {row.uuid: (row.generation, row.created_at, row.user_id,
                              row.updated_at)
                   for row in conn.execute(sa.select(consumer_rows))}
    assert written == {
        name: (batch + (batch == 1), when[batch],
               user['v'] if name in ODD_NAMES[:2] else user['u'],
               when[1] if name in ODD_NAMES[:2]
               else when[0] if batch == 1 else None)
        for batch, names in enumerate((ODD_NAMES[:4], ODD_NAMES[4:]))
        for name in names}
