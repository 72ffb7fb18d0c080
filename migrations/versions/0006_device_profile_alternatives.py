"""Device profiles may declare alternatives among their groups (1.42).

An expand step: a nullable column. A profile without alternatives keeps
NULL there, as the previous release writes every profile.

Revision ID: 0006
Revises: 0005
"""
import sqlalchemy as sa

from placement_lite.migrations import steps

revision = '0006'
down_revision = '0005'
branch_labels = None
depends_on = None


def upgrade():
    steps.add_column('device_profiles',
                     sa.Column('alternatives', sa.Text(), nullable=True))
