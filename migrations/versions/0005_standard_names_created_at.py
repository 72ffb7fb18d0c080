"""A creation time for the standard traits and resource classes.

Before this revision placement_lite added the standard names (os-traits,
os-resource-classes) without one. The reference always records it, and
fails listing them without it (500 on GET /traits and GET
/resource_classes), so a database placement_lite had synced could not be
served by the reference again. Names without one get the time of this
upgrade.

Revision ID: 0005
Revises: 0004
"""
import datetime

from alembic import op
import sqlalchemy as sa

revision = '0005'
down_revision = '0004'
branch_labels = None
depends_on = None


def upgrade():
    now = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
    for name in ('traits', 'resource_classes'):
        table = sa.table(name, sa.column('created_at'))
        op.execute(table.update().where(table.c.created_at.is_(None))
                   .values(created_at=now))
