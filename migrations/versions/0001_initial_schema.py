"""Initial schema: providers, inventories, allocations, consumers, traits,
aggregates and resource classes, as the reference Placement service has them.

A database the reference created and migrated to its newest revision is
adopted as it is. A new one gets the reference's revision recorded too, so
that the reference can serve and migrate it later.

Revision ID: 0001
Revises: 
Create Date: 2026-11-21 20:35:07.914291
"""
from alembic import op
import sqlalchemy as sa

from placement_lite.db import tables
from placement_lite.migrations import steps


revision = '0001'
down_revision = None
branch_labels = None
depends_on = None


def upgrade():
    reference_revision = _reference_revision()
    if reference_revision == tables.REFERENCE_HEAD:
        return
    if reference_revision is not None:
        raise RuntimeError(
            'This database is at revision %s of the reference Placement '
            "service's schema; placement_lite adopts revision %s. Bring it "
            "there with the reference's `placement-manage db sync` first."
            % (reference_revision, tables.REFERENCE_HEAD))
    _create_reference_schema()
    steps.create_table(
        tables.REFERENCE_VERSION_TABLE,
        sa.Column('version_num', sa.String(32), nullable=False),
        sa.PrimaryKeyConstraint('version_num', name='alembic_version_pkc'))
    version = sa.table(tables.REFERENCE_VERSION_TABLE,
                       sa.column('version_num'))
    op.bulk_insert(version, [{'version_num': tables.REFERENCE_HEAD}])


def _reference_revision():
    """The reference's revision of this database, None when it has none."""
    conn = op.get_bind()
    if not sa.inspect(conn).has_table(tables.REFERENCE_VERSION_TABLE):
        return None
    return conn.exec_driver_sql(
        'SELECT version_num FROM %s' % tables.REFERENCE_VERSION_TABLE
    ).scalar()


def _create_reference_schema():
    _create_table('consumer_types',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('name', sa.Unicode(length=255), nullable=False),
    sa.Column('created_at', sa.DateTime(), nullable=True),
    sa.Column('updated_at', sa.DateTime(), nullable=True),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('name', name='uniq_consumer_types0name')
    )
    _create_table('placement_aggregates',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('uuid', sa.String(length=36), nullable=False),
    sa.Column('created_at', sa.DateTime(), nullable=True),
    sa.Column('updated_at', sa.DateTime(), nullable=True),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('uuid', name='uniq_placement_aggregates0uuid')
    )
    _create_table('projects',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('external_id', sa.String(length=255), nullable=False),
    sa.Column('created_at', sa.DateTime(), nullable=True),
    sa.Column('updated_at', sa.DateTime(), nullable=True),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('external_id', name='uniq_projects0external_id')
    )
    _create_table('resource_classes',
    sa.Column('id', sa.Integer(), autoincrement=False, nullable=False),
    sa.Column('name', sa.String(length=255), nullable=False),
    sa.Column('created_at', sa.DateTime(), nullable=True),
    sa.Column('updated_at', sa.DateTime(), nullable=True),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('name', name='uniq_resource_classes0name')
    )
    _create_table('resource_providers',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('uuid', sa.String(length=36), nullable=False),
    sa.Column('name', sa.Unicode(length=200), nullable=True),
    sa.Column('generation', sa.Integer(), nullable=False),
    sa.Column('root_provider_id', sa.Integer(), nullable=True),
    sa.Column('parent_provider_id', sa.Integer(), nullable=True),
    sa.Column('created_at', sa.DateTime(), nullable=True),
    sa.Column('updated_at', sa.DateTime(), nullable=True),
    sa.ForeignKeyConstraint(['parent_provider_id'], ['resource_providers.id'], ),
    sa.ForeignKeyConstraint(['root_provider_id'], ['resource_providers.id'], ),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('name', name='uniq_resource_providers0name'),
    sa.UniqueConstraint('uuid', name='uniq_resource_providers0uuid')
    )
    steps.create_index(
        'resource_providers_parent_provider_id_idx', 'resource_providers',
        ['parent_provider_id'])
    steps.create_index(
        'resource_providers_root_provider_id_idx', 'resource_providers',
        ['root_provider_id'])

    _create_table('traits',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('name', sa.Unicode(length=255), nullable=False),
    sa.Column('created_at', sa.DateTime(), nullable=True),
    sa.Column('updated_at', sa.DateTime(), nullable=True),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('name', name='uniq_traits0name')
    )
    _create_table('users',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('external_id', sa.String(length=255), nullable=False),
    sa.Column('created_at', sa.DateTime(), nullable=True),
    sa.Column('updated_at', sa.DateTime(), nullable=True),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('external_id', name='uniq_users0external_id')
    )
    _create_table('allocations',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('resource_provider_id', sa.Integer(), nullable=False),
    sa.Column('consumer_id', sa.String(length=36), nullable=False),
    sa.Column('resource_class_id', sa.Integer(), nullable=False),
    sa.Column('used', sa.Integer(), nullable=False),
    sa.Column('created_at', sa.DateTime(), nullable=True),
    sa.Column('updated_at', sa.DateTime(), nullable=True),
    sa.ForeignKeyConstraint(['resource_provider_id'], ['resource_providers.id'], ),
    sa.PrimaryKeyConstraint('id')
    )
    steps.create_index(
        'allocations_consumer_id_idx', 'allocations',
        ['consumer_id'])
    steps.create_index(
        'allocations_resource_class_id_idx', 'allocations',
        ['resource_class_id'])
    steps.create_index(
        'allocations_resource_provider_class_used_idx', 'allocations',
        ['resource_provider_id', 'resource_class_id', 'used'])

    _create_table('consumers',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('uuid', sa.String(length=36), nullable=False),
    sa.Column('project_id', sa.Integer(), nullable=False),
    sa.Column('user_id', sa.Integer(), nullable=False),
    sa.Column('generation', sa.Integer(), nullable=False),
    sa.Column('consumer_type_id', sa.Integer(), nullable=True),
    sa.Column('created_at', sa.DateTime(), nullable=True),
    sa.Column('updated_at', sa.DateTime(), nullable=True),
    sa.ForeignKeyConstraint(['consumer_type_id'], ['consumer_types.id'], ),
    sa.ForeignKeyConstraint(['project_id'], ['projects.id'], ),
    sa.ForeignKeyConstraint(['user_id'], ['users.id'], ),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('uuid', name='uniq_consumers0uuid')
    )
    steps.create_index(
        'consumers_consumer_type_id_idx', 'consumers',
        ['consumer_type_id'])
    steps.create_index(
        'consumers_project_id_user_id_uuid_idx', 'consumers',
        ['project_id', 'user_id', 'uuid'])
    steps.create_index(
        'consumers_project_id_uuid_idx', 'consumers',
        ['project_id', 'uuid'])

    _create_table('inventories',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('resource_provider_id', sa.Integer(), nullable=False),
    sa.Column('resource_class_id', sa.Integer(), nullable=False),
    sa.Column('total', sa.Integer(), nullable=False),
    sa.Column('reserved', sa.Integer(), nullable=False),
    sa.Column('min_unit', sa.Integer(), nullable=False),
    sa.Column('max_unit', sa.Integer(), nullable=False),
    sa.Column('step_size', sa.Integer(), nullable=False),
    sa.Column('allocation_ratio', sa.Float(), nullable=False),
    sa.Column('created_at', sa.DateTime(), nullable=True),
    sa.Column('updated_at', sa.DateTime(), nullable=True),
    sa.ForeignKeyConstraint(['resource_provider_id'], ['resource_providers.id'], ),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('resource_provider_id', 'resource_class_id', name='uniq_inventories0resource_provider_resource_class')
    )
    steps.create_index(
        'inventories_resource_class_id_idx', 'inventories',
        ['resource_class_id'])

    _create_table('resource_provider_aggregates',
    sa.Column('resource_provider_id', sa.Integer(), nullable=False),
    sa.Column('aggregate_id', sa.Integer(), nullable=False),
    sa.Column('created_at', sa.DateTime(), nullable=True),
    sa.Column('updated_at', sa.DateTime(), nullable=True),
    sa.ForeignKeyConstraint(['aggregate_id'], ['placement_aggregates.id'], ),
    sa.ForeignKeyConstraint(['resource_provider_id'], ['resource_providers.id'], ),
    sa.PrimaryKeyConstraint('resource_provider_id', 'aggregate_id')
    )
    steps.create_index(
        'resource_provider_aggregates_aggregate_id_idx', 'resource_provider_aggregates',
        ['aggregate_id'])

    _create_table('resource_provider_traits',
    sa.Column('trait_id', sa.Integer(), nullable=False),
    sa.Column('resource_provider_id', sa.Integer(), nullable=False),
    sa.Column('created_at', sa.DateTime(), nullable=True),
    sa.Column('updated_at', sa.DateTime(), nullable=True),
    sa.ForeignKeyConstraint(['resource_provider_id'], ['resource_providers.id'], ),
    sa.ForeignKeyConstraint(['trait_id'], ['traits.id'], ),
    sa.PrimaryKeyConstraint('trait_id', 'resource_provider_id')
    )
    steps.create_index(
        'resource_provider_traits_resource_provider_trait_idx', 'resource_provider_traits',
        ['resource_provider_id', 'trait_id'])


def _create_table(name, *columns):
    steps.create_table(name, *columns,
                       **tables.mysql_table_options(op.get_bind().dialect))
