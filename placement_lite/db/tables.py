"""The database schema, as SQLAlchemy Core tables.

The shape follows the reference Placement schema (so that data can be
reasoned about the same way), plus a table for device profiles. Migrations in
``migrations/versions`` create exactly these tables, and the reference's
version table, which is not modelled here.
"""

import math

import sqlalchemy as sa
from sqlalchemy.dialects import mysql

metadata = sa.MetaData()

#: Where alembic keeps placement_lite's own schema revision. The
#: reference's ``alembic_version`` keeps the reference's, so that either
#: service can migrate and serve the same database.
VERSION_TABLE = 'placement_lite_version'
#: The reference's newest schema revision (openstack-placement 16.0.0):
#: placement_lite's first migration creates that schema, or adopts a
#: database the reference left at it.
REFERENCE_HEAD = 'a082b8bb98d0'
REFERENCE_VERSION_TABLE = 'alembic_version'


#: The collation of the tables on MariaDB and on MySQL: binary and NO PAD,
#: so that names compare as on PostgreSQL and SQLite (case, accents and
#: trailing spaces count).
MYSQL_COLLATIONS = {'mariadb': 'utf8mb4_nopad_bin',
                    'mysql': 'utf8mb4_0900_bin'}


def mysql_table_options(dialect):
    """The options migrations create tables with: on MySQL and MariaDB,
    InnoDB and 4-byte UTF-8 (see MYSQL_COLLATIONS), whatever the
    database's defaults; nothing elsewhere."""
    if dialect.name != 'mysql':
        return {}
    return {'mysql_engine': 'InnoDB', 'mysql_charset': 'utf8mb4',
            'mysql_collate': MYSQL_COLLATIONS[
                'mariadb' if dialect.is_mariadb else 'mysql']}


def _timestamps():
    return [
        sa.Column('created_at', sa.DateTime, nullable=True),
        sa.Column('updated_at', sa.DateTime, nullable=True),
    ]


resource_providers = sa.Table(
    'resource_providers', metadata,
    sa.Column('id', sa.Integer, primary_key=True, autoincrement=True),
    sa.Column('uuid', sa.String(36), nullable=False),
    sa.Column('name', sa.Unicode(200), nullable=True),
    sa.Column('generation', sa.Integer, nullable=False, default=0),
    sa.Column('root_provider_id', sa.Integer,
              sa.ForeignKey('resource_providers.id'), nullable=True),
    sa.Column('parent_provider_id', sa.Integer,
              sa.ForeignKey('resource_providers.id'), nullable=True),
    *_timestamps(),
    sa.UniqueConstraint('uuid', name='uniq_resource_providers0uuid'),
    sa.UniqueConstraint('name', name='uniq_resource_providers0name'),
    sa.Index('resource_providers_root_provider_id_idx', 'root_provider_id'),
    sa.Index('resource_providers_parent_provider_id_idx',
             'parent_provider_id'),
)

resource_classes = sa.Table(
    'resource_classes', metadata,
    sa.Column('id', sa.Integer, primary_key=True, autoincrement=False),
    sa.Column('name', sa.String(255), nullable=False),
    *_timestamps(),
    sa.UniqueConstraint('name', name='uniq_resource_classes0name'),
)

inventories = sa.Table(
    'inventories', metadata,
    sa.Column('id', sa.Integer, primary_key=True, autoincrement=True),
    sa.Column('resource_provider_id', sa.Integer,
              sa.ForeignKey('resource_providers.id'), nullable=False),
    sa.Column('resource_class_id', sa.Integer, nullable=False),
    sa.Column('total', sa.Integer, nullable=False),
    sa.Column('reserved', sa.Integer, nullable=False),
    sa.Column('min_unit', sa.Integer, nullable=False),
    sa.Column('max_unit', sa.Integer, nullable=False),
    sa.Column('step_size', sa.Integer, nullable=False),
    # Double precision everywhere (MySQL's FLOAT is single: migration 0004).
    sa.Column('allocation_ratio', sa.Float().with_variant(
        mysql.DOUBLE(asdecimal=False), 'mysql'), nullable=False),
    *_timestamps(),
    sa.UniqueConstraint('resource_provider_id', 'resource_class_id',
                        name='uniq_inventories0resource_provider_resource_class'),
    sa.Index('inventories_resource_class_id_idx', 'resource_class_id'),
)


def capacity(inventory):
    """SQL: what an inventory row holds, ``(total - reserved) *
    allocation_ratio`` (``inventory`` is the table or an alias)."""
    return ((inventory.c.total - inventory.c.reserved)
            * inventory.c.allocation_ratio)


def capacity_of(total, reserved, allocation_ratio):
    """:func:`capacity` in Python, for values already read: an int, as
    the reference shows it; -inf for a ratio so far below zero that no int
    holds the product (writes refuse it as any negative capacity)."""
    held = (total - reserved) * allocation_ratio
    return int(held) if math.isfinite(held) else held


def largest_unit(inventory):
    """SQL: the most one allocation could take of an inventory row if
    nothing were used: the smaller of its capacity and max_unit."""
    held = capacity(inventory)
    return sa.case((inventory.c.max_unit < held, inventory.c.max_unit),
                   else_=held)


#: Finds, by one index probe per class, the largest amount any provider
#: could give of a class: a request asking more finds nothing at once.
#: Not on MySQL/MariaDB, which have no index on expressions (see migration
#: 0003).
sa.Index('inventories_resource_class_largest_unit_idx',
         inventories.c.resource_class_id, largest_unit(inventories))

projects = sa.Table(
    'projects', metadata,
    sa.Column('id', sa.Integer, primary_key=True, autoincrement=True),
    sa.Column('external_id', sa.String(255), nullable=False),
    *_timestamps(),
    sa.UniqueConstraint('external_id', name='uniq_projects0external_id'),
)

users = sa.Table(
    'users', metadata,
    sa.Column('id', sa.Integer, primary_key=True, autoincrement=True),
    sa.Column('external_id', sa.String(255), nullable=False),
    *_timestamps(),
    sa.UniqueConstraint('external_id', name='uniq_users0external_id'),
)

consumer_types = sa.Table(
    'consumer_types', metadata,
    sa.Column('id', sa.Integer, primary_key=True, autoincrement=True),
    sa.Column('name', sa.Unicode(255), nullable=False),
    *_timestamps(),
    sa.UniqueConstraint('name', name='uniq_consumer_types0name'),
)

consumers = sa.Table(
    'consumers', metadata,
    sa.Column('id', sa.Integer, primary_key=True, autoincrement=True),
    sa.Column('uuid', sa.String(36), nullable=False),
    sa.Column('project_id', sa.Integer, sa.ForeignKey('projects.id'),
              nullable=False),
    sa.Column('user_id', sa.Integer, sa.ForeignKey('users.id'),
              nullable=False),
    sa.Column('generation', sa.Integer, nullable=False, default=0),
    sa.Column('consumer_type_id', sa.Integer,
              sa.ForeignKey('consumer_types.id'), nullable=True),
    *_timestamps(),
    sa.UniqueConstraint('uuid', name='uniq_consumers0uuid'),
    sa.Index('consumers_project_id_uuid_idx', 'project_id', 'uuid'),
    sa.Index('consumers_project_id_user_id_uuid_idx',
             'project_id', 'user_id', 'uuid'),
    sa.Index('consumers_consumer_type_id_idx', 'consumer_type_id'),
)

allocations = sa.Table(
    'allocations', metadata,
    sa.Column('id', sa.Integer, primary_key=True, autoincrement=True),
    sa.Column('resource_provider_id', sa.Integer,
              sa.ForeignKey('resource_providers.id'), nullable=False),
    sa.Column('consumer_id', sa.String(36), nullable=False),
    sa.Column('resource_class_id', sa.Integer, nullable=False),
    sa.Column('used', sa.Integer, nullable=False),
    *_timestamps(),
    sa.Index('allocations_resource_provider_class_used_idx',
             'resource_provider_id', 'resource_class_id', 'used'),
    sa.Index('allocations_resource_class_id_idx', 'resource_class_id'),
    sa.Index('allocations_consumer_id_idx', 'consumer_id'),
)

traits = sa.Table(
    'traits', metadata,
    sa.Column('id', sa.Integer, primary_key=True, autoincrement=True),
    sa.Column('name', sa.Unicode(255), nullable=False),
    *_timestamps(),
    sa.UniqueConstraint('name', name='uniq_traits0name'),
)

resource_provider_traits = sa.Table(
    'resource_provider_traits', metadata,
    sa.Column('trait_id', sa.Integer, sa.ForeignKey('traits.id'),
              primary_key=True),
    sa.Column('resource_provider_id', sa.Integer,
              sa.ForeignKey('resource_providers.id'), primary_key=True),
    *_timestamps(),
    sa.Index('resource_provider_traits_resource_provider_trait_idx',
             'resource_provider_id', 'trait_id'),
)

placement_aggregates = sa.Table(
    'placement_aggregates', metadata,
    sa.Column('id', sa.Integer, primary_key=True, autoincrement=True),
    sa.Column('uuid', sa.String(36), nullable=False),
    *_timestamps(),
    sa.UniqueConstraint('uuid', name='uniq_placement_aggregates0uuid'),
)

resource_provider_aggregates = sa.Table(
    'resource_provider_aggregates', metadata,
    sa.Column('resource_provider_id', sa.Integer,
              sa.ForeignKey('resource_providers.id'), primary_key=True),
    sa.Column('aggregate_id', sa.Integer,
              sa.ForeignKey('placement_aggregates.id'), primary_key=True),
    *_timestamps(),
    sa.Index('resource_provider_aggregates_aggregate_id_idx', 'aggregate_id'),
)

device_profiles = sa.Table(
    'device_profiles', metadata,
    sa.Column('id', sa.Integer, primary_key=True, autoincrement=True),
    sa.Column('uuid', sa.String(36), nullable=False),
    sa.Column('name', sa.String(255), nullable=False),
    sa.Column('description', sa.Text, nullable=True),
    # The ordered list of request groups, as JSON text: order is part of
    # the resource (group i becomes the suffix device_profile_<i>).
    sa.Column('groups', sa.Text, nullable=False),
    # Its sets of alternatives (from 1.42), lists of group positions as
    # JSON text; NULL when it has none (as every profile written before).
    sa.Column('alternatives', sa.Text, nullable=True),
    *_timestamps(),
    sa.UniqueConstraint('uuid', name='uniq_device_profiles0uuid'),
    sa.UniqueConstraint('name', name='uniq_device_profiles0name'),
)


#: PostgreSQL: the providers each transaction wrote (their rows, or
#: allocations of them), logged by triggers (migration 0007) for a
#: process to bring what it keeps up to date (db/cloud/reads.py). Empty
#: elsewhere.
PROVIDER_WRITES = 'placement_lite_provider_writes'
provider_writes = sa.Table(
    PROVIDER_WRITES, metadata,
    # The writing transaction's id (pg_current_xact_id(): 64 bits).
    sa.Column('transaction_id', sa.BigInteger, primary_key=True,
              autoincrement=False),
    sa.Column('provider_id', sa.Integer, primary_key=True,
              autoincrement=False),
)

#: PostgreSQL: the transactions that wrote what providers are rather than
#: what they use (providers created, deleted or moved, inventories,
#: traits, aggregates), logged by triggers (migration 0007): what a
#: process derives from those holds while none was written since
#: (db/cloud/reads.py). Empty elsewhere.
STRUCTURE_WRITES = 'placement_lite_structure_writes'
structure_writes = sa.Table(
    STRUCTURE_WRITES, metadata,
    sa.Column('transaction_id', sa.BigInteger, primary_key=True,
              autoincrement=False),
)
