"""db/bulk.py: a statement made once, its values bound when it runs
(one_of_bound, where_one_of_bound), finds the rows the same statement
made with its values finds, on every database, whatever the values'
characters."""

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
