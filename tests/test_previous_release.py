"""The previous release keeps serving on a database this release migrated:
expand now, contract in a later release (migrations/README.md).

The previous release is the one tests/releases.py records (0.2.0), its
tree taken from this repository's history (``git archive``; a shallow
clone without its commit fails these tests, saying so). Its code runs
under this virtual environment's interpreter and libraries, first on
PYTHONPATH, under uwsgi from its own etc/uwsgi.ini with
``sync_on_startup``, as an API host not yet upgraded (in a rolling
upgrade) or rolled back to runs.

0.2.0 serves a database whose revision it does not know (a newer
release's), so these tests show that its code serves on the schema and the
data this release writes, its migrations included, beside this release's
processes; they catch a migration that is not an expand step.
"""

import pytest
import sqlalchemy as sa

from placement_lite.db import api as db_api
from placement_lite.db import migrate
from tests import harness
from tests import releases
from tests import servers

pytestmark = pytest.mark.slow


@pytest.fixture(scope='module')
def previous_tree(tmp_path_factory):
    return releases.extract(releases.PREVIOUS,
                            str(tmp_path_factory.mktemp('previous')))


def test_the_previous_release_serves_a_database_at_head(backend,
                                                        previous_tree):
    """Alone, and beside a process of this release: each release claims
    against providers the other made, and reads the claims the other
    made."""
    url = harness.empty_database_url(backend)
    database = db_api.Database(url)
    migrate.upgrade(database)
    current = harness.Environment(backend, database_url=url)
    previous = servers.Uwsgi(url, processes=2, tree=previous_tree,
                             extra_conf='sync_on_startup = true\n')
    try:
        def through_previous(method, path, body):
            return servers.request(previous.port, method, path, body,
                                   version=releases.VERSION)

        def through_current(method, path, body):
            return current.request(method, path, body,
                                   version=releases.VERSION)[::2]

        releases.assert_serves(through_previous)
        releases.assert_serves(through_previous,
                               claim_through=through_current)
        releases.assert_serves(through_current,
                               claim_through=through_previous)

        assert previous.problems_in_log() == []
        assert migrate.current_revision(database) == migrate.head_revision()
    finally:
        previous.cleanup()
        current.close()
        database.dispose()


def test_an_upgrade_from_the_previous_release_only_expands(
        backend, previous_tree):
    """A database the previous release migrated, then upgraded to head:
    every table and column it had is still there, each column of a type
    that holds what it held and nullable if it was, and every column
    added is nullable or has a default (the previous release inserts rows
    without it)."""
    url = harness.empty_database_url(backend)
    releases.upgrade_with(previous_tree, url)
    before = _columns(url)
    database = db_api.Database(url)
    try:
        migrate.upgrade(database)
        assert migrate.current_revision(database) == migrate.head_revision()
    finally:
        database.dispose()
    after = _columns(url)

    assert _contractions(before, after) == []


def _columns(url):
    """{table: {column name: its reflected column}} of the database."""
    engine = sa.create_engine(url)
    try:
        inspector = sa.inspect(engine)
        return {table: {column['name']: column
                        for column in inspector.get_columns(table)}
                for table in inspector.get_table_names()}
    finally:
        engine.dispose()


def _contractions(before, after):
    """What the upgrade from ``before`` to ``after`` did that the previous
    release's processes may not serve on, one line each."""
    found = []
    for table, columns in before.items():
        if table not in after:
            found.append('table %s dropped' % table)
            continue
        for name, column in columns.items():
            now = after[table].get(name)
            if now is None:
                found.append('column %s.%s dropped' % (table, name))
                continue
            if not _holds(now['type'], column['type']):
                found.append('column %s.%s: %s, was %s' % (
                    table, name, now['type'], column['type']))
            if column['nullable'] and not now['nullable']:
                found.append('column %s.%s made NOT NULL' % (table, name))
        for name in after[table].keys() - columns.keys():
            added = after[table][name]
            if not added['nullable'] and added.get('default') is None:
                found.append('column %s.%s added NOT NULL without a default'
                             % (table, name))
    return found


def _holds(now, was):
    """Whether a column of type ``now`` holds every value one of type
    ``was`` held: the same type, or a longer string. Any other change is
    reported, to be looked at (and added here when it only widens)."""
    if str(now) == str(was):
        return True
    return (isinstance(now, sa.String) and type(now) is type(was)
            and (now.length is None
                 or (was.length is not None and now.length >= was.length)))
