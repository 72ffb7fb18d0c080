"""A database a newer release migrated, served by this release: what a
rollback leaves (docs/databases.md, "Expand and contract").

The newer release is made up (tests/releases.py): this tree's migrations
and one more, an expand step. ``db sync`` leaves the database as it is
and exits 0, a process with ``sync_on_startup`` serves on it, logging one
line (``placement-lite status`` warns: tests/test_status_command.py).
"""

import logging
import os
import subprocess
import sys

import pytest
import sqlalchemy as sa

from placement_lite.db import migrate
from tests import harness
from tests import releases

pytestmark = pytest.mark.slow

PLACEMENT_LITE = os.path.join(os.path.dirname(sys.executable),
                              'placement-lite')
#: The line that says a newer release migrated the database.
NEWER_LINE = (
    'The database schema is at revision %s, which a newer release of '
    'placement_lite recorded (this release knows up to %s): left as it '
    'is, and served as it is.' % (releases.NEWER_REVISION,
                                  migrate.head_revision()))


def _schema(url):
    """{table: [(column, type, nullable)]} and the indexes' names."""
    engine = sa.create_engine(url)
    try:
        inspector = sa.inspect(engine)
        return {table: ([(column['name'], str(column['type']),
                          column['nullable'])
                         for column in inspector.get_columns(table)],
                        sorted(index['name']
                               for index in inspector.get_indexes(table)))
                for table in inspector.get_table_names()}
    finally:
        engine.dispose()


def _db_sync(tmp_path, url):
    config = tmp_path / 'placement.conf'
    config.write_text('[placement_database]\nconnection = %s\n' % url)
    return subprocess.run(
        [PLACEMENT_LITE, '--config-file', str(config), 'db', 'sync'],
        capture_output=True, text=True, timeout=120)


def test_db_sync_leaves_a_newer_database_as_it_is(backend, tmp_path):
    """Exit 0 (the database serves this release), the database's
    revision on standard output as after any sync, one line on standard
    error, and not a table, column or index changed."""
    url = releases.migrated_by_a_newer_release(backend, str(tmp_path))
    before = _schema(url)

    synced = _db_sync(tmp_path, url)

    assert (synced.returncode, synced.stdout, synced.stderr) == (
        0, releases.NEWER_REVISION + '\n', 'placement-lite: %s\n' % NEWER_LINE)
    assert _schema(url) == before
    assert 'newer_release_notes' in before


def test_a_process_with_sync_on_startup_serves_a_newer_database(
        backend, tmp_path, caplog):
    url = releases.migrated_by_a_newer_release(backend, str(tmp_path))

    with caplog.at_level(logging.WARNING, logger=migrate.LOG.name):
        environment = harness.Environment(
            backend, database_url=url,
            **{'placement_database.sync_on_startup': True})
    try:
        assert [record.getMessage() for record in caplog.records
                if record.name == migrate.LOG.name] == [NEWER_LINE]
        releases.assert_serves(
            lambda method, path, body: environment.request(
                method, path, body, version=releases.VERSION)[::2])
        assert migrate.current_revision(environment.db) == (
            releases.NEWER_REVISION)
    finally:
        environment.close()
