"""Schema upgrades with alembic, driven from Python (``placement-lite db``)."""

import os

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory

import migrations


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
        config.attributes['connection'] = conn
        command.upgrade(config, revision)


def current_revision(database):
    with database.engine.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()


def head_revision():
    return ScriptDirectory.from_config(_alembic_config()).get_current_head()
