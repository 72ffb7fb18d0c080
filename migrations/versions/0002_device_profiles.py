"""Device profiles: named, ordered lists of request groups.

Revision ID: 0002
Revises: 0001
"""
from alembic import op
import sqlalchemy as sa

from placement_lite.db import tables
from placement_lite.migrations import steps

revision = '0002'
down_revision = '0001'
branch_labels = None
depends_on = None


def upgrade():
    _create_table('device_profiles',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('uuid', sa.String(length=36), nullable=False),
    sa.Column('name', sa.String(length=255), nullable=False),
    sa.Column('description', sa.Text(), nullable=True),
    sa.Column('groups', sa.Text(), nullable=False),
    sa.Column('created_at', sa.DateTime(), nullable=True),
    sa.Column('updated_at', sa.DateTime(), nullable=True),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('name', name='uniq_device_profiles0name'),
    sa.UniqueConstraint('uuid', name='uniq_device_profiles0uuid')
    )


def _create_table(name, *columns):
    steps.create_table(name, *columns,
                       **tables.mysql_table_options(op.get_bind().dialect))
