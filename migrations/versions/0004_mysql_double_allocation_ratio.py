"""MySQL/MariaDB: inventories.allocation_ratio in double precision.

The reference's schema declares the ratio a Float, which MySQL and MariaDB
store in single precision: 0.7 becomes 0.699999988..., and a capacity
computed in SQL, ``(total - reserved) * allocation_ratio``, falls short of
the one computed from the ratio as the API shows it (10 x 0.7 gives
6.9999998, so a request for 7 found no candidate). PostgreSQL and SQLite
already store a double. Each ratio becomes the double of the decimal the
API showed for it (MySQL prints a single-precision value with the digits
it holds); the reference reads a double as well as it did the float.

Revision ID: 0004
Revises: 0003
"""
import struct

from alembic import op
import sqlalchemy as sa
from sqlalchemy.dialects import mysql

revision = '0004'
down_revision = '0003'
branch_labels = None
depends_on = None


def _single(value):
    """``value`` rounded to single precision, as a MySQL FLOAT holds it."""
    return struct.unpack('f', struct.pack('f', value))[0]


def upgrade():
    conn = op.get_bind()
    if conn.dialect.name != 'mysql':
        return
    shown = conn.exec_driver_sql(
        'SELECT DISTINCT CAST(allocation_ratio AS CHAR) FROM inventories'
    ).scalars().all()
    op.alter_column('inventories', 'allocation_ratio',
                    existing_type=sa.Float(), type_=mysql.DOUBLE(),
                    existing_nullable=False)
    inventories = sa.table('inventories', sa.column('allocation_ratio'))
    for text in shown:
        ratio = float(text)
        conn.execute(inventories.update()
                     .where(inventories.c.allocation_ratio == _single(ratio))
                     .values(allocation_ratio=ratio))
