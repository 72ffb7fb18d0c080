"""An index on each inventory's largest unit, by resource class.

The largest amount one allocation could take of an inventory if nothing
were used is the smaller of max_unit and (total - reserved) *
allocation_ratio. Indexed by class, the largest over all providers is one
index probe: a candidates request asking more than that is answered at
once.

MySQL and MariaDB index no expressions (MariaDB 10.11 would need a
generated column, which would change the reference's table): there the
index is not made, and the same query reads the class's inventories.

Revision ID: 0003
Revises: 0002
"""
from alembic import op
import sqlalchemy as sa

from placement_lite.migrations import steps

revision = '0003'
down_revision = '0002'
branch_labels = None
depends_on = None


def upgrade():
    if op.get_bind().dialect.name == 'mysql':
        return
    held = '(total - reserved) * allocation_ratio'
    steps.create_index(
        'inventories_resource_class_largest_unit_idx', 'inventories',
        ['resource_class_id',
         sa.text('(CASE WHEN max_unit < %s THEN max_unit ELSE %s END)'
                 % (held, held))])
