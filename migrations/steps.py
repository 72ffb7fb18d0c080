"""Migration steps that do only what is not done yet.

Many processes may migrate one database at once, and MySQL and MariaDB
commit each DDL statement as it runs: a migration may be half done by a
process that died, or being done by another at this moment. So a step
first looks: a table or an index that exists is left as it is. Two
processes that look at the same moment both go on; the second fails
("already exists") and ``placement_lite.db.migrate`` starts it again from
the revision then recorded.
"""

from alembic import op
import sqlalchemy as sa


def create_table(name, *columns, **options):
    """``op.create_table(name, *columns, **options)`` unless the table
    exists."""
    if not sa.inspect(op.get_bind()).has_table(name):
        op.create_table(name, *columns, **options)


def create_index(name, table, columns):
    """``op.create_index(name, table, columns)`` unless the index exists."""
    existing = sa.inspect(op.get_bind()).get_indexes(table)
    if name not in {index['name'] for index in existing}:
        op.create_index(name, table, columns)


def add_column(table, column):
    """``op.add_column(table, column)`` unless the table has the column."""
    existing = sa.inspect(op.get_bind()).get_columns(table)
    if column.name not in {found['name'] for found in existing}:
        op.add_column(table, column)
