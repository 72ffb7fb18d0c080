"""Releases of placement_lite other than the one checked out: a newer
one, made up.

tests/test_newer_database.py runs this tree's code against a database a
made-up newer release migrated, as after a rollback.
"""

import os
import shutil
import uuid

from alembic import command
from alembic.config import Config

from placement_lite import migrations as own_migrations
from placement_lite.db import api as db_api
from placement_lite.db import migrate
from tests import harness

#: The revision of the made-up newer release's migration.
NEWER_REVISION = 'ffff'
#: What it adds, as a newer release may (an expand step): a nullable
#: column, a table and an index.
NEWER_MIGRATION = '''"""A newer release's expand step, made up by tests/releases.py.

Revision ID: {revision}
Revises: {down_revision}
"""
from alembic import op
import sqlalchemy as sa

revision = {revision!r}
down_revision = {down_revision!r}
branch_labels = None
depends_on = None


def upgrade():
    op.add_column('resource_providers',
                  sa.Column('newer_release_note', sa.String(255),
                            nullable=True))
    op.create_table('newer_release_notes',
                    sa.Column('id', sa.Integer(), primary_key=True),
                    sa.Column('note', sa.String(255), nullable=False))
    op.create_index('newer_release_notes_note_idx', 'newer_release_notes',
                    ['note'])
'''


def newer_migrations(directory):
    """A copy of this tree's migrations with one more revision,
    :data:`NEWER_REVISION` (:data:`NEWER_MIGRATION`): the script directory
    of a made-up newer release."""
    location = os.path.join(directory, 'newer-migrations')
    shutil.copytree(os.path.dirname(own_migrations.__file__), location,
                    ignore=shutil.ignore_patterns('__pycache__'))
    with open(os.path.join(location, 'versions',
                           '%s_newer_release.py' % NEWER_REVISION),
              'w') as handle:
        handle.write(NEWER_MIGRATION.format(
            revision=NEWER_REVISION, down_revision=migrate.head_revision()))
    return location


def migrated_by_a_newer_release(backend, directory):
    """The URL of a new database on ``backend`` migrated by this release,
    then by the newer one (its script directory made in ``directory``)."""
    url = harness.empty_database_url(backend)
    database = db_api.Database(url)
    try:
        migrate.upgrade(database)
        config = Config()
        config.set_main_option('script_location',
                               newer_migrations(directory))
        with database.engine.begin() as conn:
            config.attributes['connection'] = conn
            command.upgrade(config, 'head')
        assert migrate.current_revision(database) == NEWER_REVISION
    finally:
        database.dispose()
    return url


#: The microversion of :func:`assert_serves`' requests: the reference's
#: newest, which every release serves.
VERSION = '1.39'


def assert_serves(request, claim_through=None):
    """A provider created and given inventory through ``request``, claimed
    against through ``claim_through`` (``request`` when None), then found
    by GET /allocation_candidates and its usages read through ``request``,
    each answer exact. ``request(method, path, body)`` returns (status,
    body). Its names are new each time: the database may hold others."""
    claim_through = claim_through or request
    provider = str(uuid.uuid4())
    claimed, refused = str(uuid.uuid4()), str(uuid.uuid4())

    status, body = request('POST', '/resource_providers',
                           {'name': 'host-' + provider, 'uuid': provider})
    assert (status, body['uuid'], body['generation']) == (200, provider, 0)
    status, body = request(
        'PUT', '/resource_providers/%s/inventories' % provider,
        {'resource_provider_generation': 0, 'inventories': {
            'VCPU': {'total': 8}, 'MEMORY_MB': {'total': 4096}}})
    assert (status, body['resource_provider_generation']) == (200, 1)

    assert claim_through('PUT', '/allocations/' + claimed, _claim(
        provider, VCPU=2, MEMORY_MB=1024)) == (204, None)
    status, body = claim_through('PUT', '/allocations/' + refused, _claim(
        provider, VCPU=7, MEMORY_MB=1024))
    assert (status, body['errors'][0]['code']) == (
        409, 'placement.undefined_code')

    status, body = request(
        'GET', '/allocation_candidates?resources=VCPU:6,MEMORY_MB:3072'
        '&in_tree=%s' % provider, None)
    assert status == 200
    assert body['allocation_requests'] == [{
        'allocations': {provider: {'resources': {'VCPU': 6,
                                                 'MEMORY_MB': 3072}}},
        'mappings': {'': [provider]}}]
    assert body['provider_summaries'] == {provider: {
        'resources': {'VCPU': {'capacity': 8, 'used': 2},
                      'MEMORY_MB': {'capacity': 4096, 'used': 1024}},
        'traits': [], 'parent_provider_uuid': None,
        'root_provider_uuid': provider}}
    assert request('GET', '/resource_providers/%s/usages' % provider,
                   None) == (200, {'resource_provider_generation': 2,
                                   'usages': {'VCPU': 2, 'MEMORY_MB': 1024}})


def _claim(provider, **resources):
    return {'allocations': {provider: {'resources': resources}},
            'project_id': 'project', 'user_id': 'user',
            'consumer_generation': None, 'consumer_type': 'INSTANCE'}
