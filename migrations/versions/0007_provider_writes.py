"""PostgreSQL: logs of the providers each transaction wrote, and of the
transactions that changed what providers are (not what they use).

A process keeps the cloud (placement_lite/db/cloud) and, on PostgreSQL,
brings it up to date from what was written since its last read. Found
by each row's ``xmin``, which no index serves, that costs a scan of the
providers and allocations tables per request, growing with the cloud
(10 ms of a claim's database time at 5,000 hosts). Here triggers log,
for every statement writing resource_providers or allocations, the
writing transaction's id and each provider written (a row's own, an
allocation's provider), whichever service wrote it: the reference too,
during a takeover. A process reads the providers logged since: an index
range, as long as what was written.

Other triggers log the transactions writing anything else that a
process derives from the database and keeps while it is unchanged (the
sharing providers and the trees each serves, the members of aggregates):
providers created, deleted or moved, inventories, traits, aggregates.
While none was written since, what was derived holds, however many
allocations were written meanwhile.

The triggers trim the logs now and then (one write in a thousand): rows
older than KEPT_TRANSACTIONS transactions go; a store that last read
longer ago reads the whole cloud (db/cloud/reads.py). A transaction's
provider is logged once (the key).

An expand step: a table and triggers the previous release never sees.
MySQL, MariaDB and SQLite compare the whole cloud read as text: the table
is made there too (tables.py has it), and left empty.

Revision ID: 0007
Revises: 0006
"""
from alembic import op
import sqlalchemy as sa

from placement_lite.db import tables
from placement_lite.migrations import steps

revision = '0007'
down_revision = '0006'
branch_labels = None
depends_on = None

LOG = tables.PROVIDER_WRITES
STRUCTURE_LOG = tables.STRUCTURE_WRITES
#: {table: the events of it the structure log takes}: resource_providers
#: but its generation (every allocation write bumps it).
STRUCTURE = {
    'resource_providers': ('INSERT', 'DELETE',
                           'UPDATE OF parent_provider_id, root_provider_id'),
    'inventories': ('INSERT', 'UPDATE', 'DELETE'),
    'traits': ('INSERT', 'UPDATE', 'DELETE'),
    'resource_provider_traits': ('INSERT', 'UPDATE', 'DELETE'),
    'placement_aggregates': ('INSERT', 'UPDATE', 'DELETE'),
    'resource_provider_aggregates': ('INSERT', 'UPDATE', 'DELETE'),
}
#: What the log keeps, in transactions (db/cloud/reads.py reads it only
#: for a store less than half as old).
KEPT_TRANSACTIONS = 200_000
#: {table: its column naming the provider written}.
WRITTEN = {'resource_providers': 'id',
           'allocations': 'resource_provider_id'}
#: {event: the transition tables its statements have}.
EVENTS = {'INSERT': ('new_rows',), 'UPDATE': ('old_rows', 'new_rows'),
          'DELETE': ('old_rows',)}


def upgrade():
    dialect = op.get_bind().dialect
    # Made everywhere, as tables.py has it; written on PostgreSQL only.
    steps.create_table(
        LOG,
        sa.Column('transaction_id', sa.BigInteger(), autoincrement=False,
                  nullable=False),
        sa.Column('provider_id', sa.Integer(), autoincrement=False,
                  nullable=False),
        sa.PrimaryKeyConstraint('transaction_id', 'provider_id'),
        **tables.mysql_table_options(dialect))
    steps.create_table(
        STRUCTURE_LOG,
        sa.Column('transaction_id', sa.BigInteger(), autoincrement=False,
                  nullable=False),
        sa.PrimaryKeyConstraint('transaction_id'),
        **tables.mysql_table_options(dialect))
    if dialect.name != 'postgresql':
        return
    op.execute(_TRIM)
    op.execute(_LOG_STRUCTURE)
    for table, events in STRUCTURE.items():
        trigger = 'placement_lite_%s_structure' % table
        op.execute('DROP TRIGGER IF EXISTS %s ON %s' % (trigger, table))
        op.execute('CREATE TRIGGER %s AFTER %s ON %s FOR EACH STATEMENT '
                   'EXECUTE FUNCTION %s()' % (
                       trigger, ' OR '.join(events), table,
                       LOG_STRUCTURE))
    for table, column in WRITTEN.items():
        function = 'placement_lite_log_%s_writes' % table
        # CREATE OR REPLACE: a step done again does it again alike.
        op.execute(_function(function, column))
        for event, transitions in EVENTS.items():
            trigger = 'placement_lite_%s_%s' % (table, event.lower())
            op.execute('DROP TRIGGER IF EXISTS %s ON %s' % (trigger, table))
            op.execute(
                'CREATE TRIGGER %s AFTER %s ON %s REFERENCING %s '
                'FOR EACH STATEMENT EXECUTE FUNCTION %s()' % (
                    trigger, event, table, ' '.join(
                        '%s TABLE AS %s' % (name.split('_')[0].upper(), name)
                        for name in transitions), function))


def _function(name, column):
    """The trigger function logging the providers a statement wrote:
    each in ``column`` of its transition tables, once."""
    return """
CREATE OR REPLACE FUNCTION %(name)s() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    written bigint := pg_current_xact_id()::text::bigint;
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO %(log)s SELECT DISTINCT written, %(column)s FROM new_rows
            ON CONFLICT DO NOTHING;
    ELSIF TG_OP = 'DELETE' THEN
        INSERT INTO %(log)s SELECT DISTINCT written, %(column)s FROM old_rows
            ON CONFLICT DO NOTHING;
    ELSE
        INSERT INTO %(log)s SELECT written, %(column)s FROM new_rows
            UNION SELECT written, %(column)s FROM old_rows
            ON CONFLICT DO NOTHING;
    END IF;
    IF random() < 0.001 THEN
        PERFORM %(trim)s(written);
    END IF;
    RETURN NULL;
END
$$""" % {'name': name, 'log': LOG, 'column': column, 'trim': TRIM}


TRIM = 'placement_lite_trim_provider_writes'
#: The logs without what is older than KEPT_TRANSACTIONS before a
#: transaction.
_TRIM = """
CREATE OR REPLACE FUNCTION %(trim)s(newest bigint) RETURNS void
LANGUAGE sql AS $$
    DELETE FROM %(log)s WHERE transaction_id < newest - %(kept)d;
    DELETE FROM %(structure)s WHERE transaction_id < newest - %(kept)d;
$$""" % {'trim': TRIM, 'log': LOG, 'structure': STRUCTURE_LOG,
         'kept': KEPT_TRANSACTIONS}

LOG_STRUCTURE = 'placement_lite_log_structure_writes'
#: The trigger function logging the transaction of a statement that
#: changed what providers are.
_LOG_STRUCTURE = """
CREATE OR REPLACE FUNCTION %(name)s() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    written bigint := pg_current_xact_id()::text::bigint;
BEGIN
    INSERT INTO %(log)s VALUES (written) ON CONFLICT DO NOTHING;
    IF random() < 0.001 THEN
        PERFORM %(trim)s(written);
    END IF;
    RETURN NULL;
END
$$""" % {'name': LOG_STRUCTURE, 'log': STRUCTURE_LOG, 'trim': TRIM}
