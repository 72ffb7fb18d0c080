"""Schema upgrades with alembic, driven from Python (``placement-lite db``).

placement_lite's revision is kept in its own table
(``tables.VERSION_TABLE``), beside the reference's ``alembic_version``: a
database either service created can be served and migrated by the other.
"""

import os

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
import sqlalchemy as sa

from placement_lite import migrations
from placement_lite.db import tables


def _alembic_config():
    config = Config()
    config.set_main_option('script_location',
                           os.path.dirname(os.path.abspath(migrations.__file__)))
    return config


def upgrade(database, revision='head'):
    """Bring the schema of ``database`` up to ``revision``; processes and
    hosts doing so at once take turns, and the later ones find it done."""
    config = _alembic_config()
    with database.startup_writer() as conn:
        _move_own_revision_out_of_alembic_version(conn, config)
        config.attributes['connection'] = conn
        command.upgrade(config, revision)


def _move_own_revision_out_of_alembic_version(conn, config):
    """Databases placement_lite created before it had its own version table
    keep its revision in ``alembic_version``: move it to its own table and
    record the reference's revision there, which their schema has."""
    inspector = sa.inspect(conn)
    if (inspector.has_table(tables.VERSION_TABLE)
            or not inspector.has_table(tables.REFERENCE_VERSION_TABLE)):
        return
    reference_version = sa.table(tables.REFERENCE_VERSION_TABLE,
                                 sa.column('version_num'))
    revision = conn.execute(sa.select(reference_version.c.version_num)
                            ).scalar()
    own_revisions = {script.revision for script in
                     ScriptDirectory.from_config(config).walk_revisions()}
    if revision not in own_revisions:
        return
    own_version = sa.Table(
        tables.VERSION_TABLE, sa.MetaData(),
        sa.Column('version_num', sa.String(32), primary_key=True))
    own_version.create(conn)
    conn.execute(own_version.insert().values(version_num=revision))
    conn.execute(reference_version.update().values(
        version_num=tables.REFERENCE_HEAD))


def current_revision(database):
    with database.engine.connect() as conn:
        return MigrationContext.configure(
            conn, opts={'version_table': tables.VERSION_TABLE}
        ).get_current_revision()


def head_revision():
    return ScriptDirectory.from_config(_alembic_config()).get_current_head()
