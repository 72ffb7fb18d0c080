"""Alembic environment for placement_lite.

The connection comes from the caller (``placement_lite.db.migrate``), which
puts an open SQLAlchemy connection in ``config.attributes['connection']``; run
from the ``alembic`` command line, ``sqlalchemy.url`` in alembic.ini is used.
"""

from alembic import context
import sqlalchemy as sa

from placement_lite.db import tables

config = context.config


def run_migrations_online():
    connection = config.attributes.get('connection')
    if connection is not None:
        context.configure(connection=connection,
                          target_metadata=tables.metadata,
                          version_table=tables.VERSION_TABLE,
                          render_as_batch=True)
        with context.begin_transaction():
            context.run_migrations()
        return
    engine = sa.create_engine(config.get_main_option('sqlalchemy.url'))
    with engine.connect() as conn:
        context.configure(connection=conn, target_metadata=tables.metadata,
                          version_table=tables.VERSION_TABLE,
                          render_as_batch=True)
        with context.begin_transaction():
            context.run_migrations()


run_migrations_online()
