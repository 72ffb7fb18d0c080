"""Releases of placement_lite other than the one checked out: the previous
release, taken from the repository's history, and a newer one made up.

Every migration must let the previous release's processes keep serving
on the migrated schema (expand now, contract in a later release:
migrations/README.md). tests/test_previous_release.py runs that release's
code against a database this tree migrated; tests/test_newer_database.py
runs this tree's code against a database a made-up newer release migrated,
as after a rollback.

The repository has no release tags: :data:`PREVIOUS` names the commit a
release was cut from. When a release is cut (its version set in
pyproject.toml), the next commit records it here.
"""

import collections
import os
import shutil
import subprocess
import sys
import tomllib
import uuid

from alembic import command
from alembic.config import Config
import pytest

from placement_lite import migrations as own_migrations
from placement_lite.db import api as db_api
from placement_lite.db import migrate
from tests import harness
from tests import servers

Release = collections.namedtuple('Release', 'version commit')

#: 0.2.0: the first release that serves a database a newer release
#: migrated (0.1.0, at 767206d, stopped at start-up on a revision it did not
#: know). Its migrations end at 0005.
PREVIOUS = Release('0.2.0', '5e593169da3a88dff88b65ab0cd159dac9c38b33')

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


def extract(release, directory):
    """``release``'s source tree, from the repository's own history, in
    ``directory``, laid out as it installs (pyproject.toml's package-dir:
    ``migrations/`` as ``placement_lite/migrations``), so that its code
    runs with ``directory`` first on PYTHONPATH. A clone without the
    release's commit (a shallow one) fails the test, saying so: the
    previous release cannot be checked without it."""
    found = subprocess.run(
        ['git', '-C', servers.REPO, 'cat-file', '-e',
         release.commit + '^{commit}'], capture_output=True, text=True)
    if found.returncode:
        pytest.fail(
            'The commit of placement_lite %s (%s, tests/releases.py) is not '
            'in the history of %s: %s. The check of the previous release '
            'needs the full history (a shallow clone: git fetch '
            '--unshallow).' % (release.version, release.commit,
                               servers.REPO,
                               found.stderr.strip() or 'not a git checkout'),
            pytrace=False)
    archive = subprocess.run(
        ['git', '-C', servers.REPO, 'archive', '--format=tar',
         release.commit], capture_output=True, check=True)
    tree = os.path.join(directory, 'placement-lite-%s' % release.version)
    os.makedirs(tree)
    subprocess.run(['tar', '-x', '-C', tree], input=archive.stdout,
                   check=True)
    with open(os.path.join(tree, 'pyproject.toml'), 'rb') as handle:
        project = tomllib.load(handle)
    assert project['project']['version'] == release.version, (
        'tests/releases.py: commit %s is version %s, not %s'
        % (release.commit, project['project']['version'], release.version))
    package_dirs = project['tool']['setuptools'].get('package-dir', {})
    for package, source in package_dirs.items():
        os.rename(os.path.join(tree, source),
                  os.path.join(tree, *package.split('.')))
    _assert_imported_from(tree)
    return tree


def _assert_imported_from(tree):
    """The code a process run in ``tree`` with it on PYTHONPATH runs is
    the tree's, its migrations included (not this checkout's, which the
    editable install would find otherwise, and ``python -c`` in this
    checkout's directory too)."""
    imported = subprocess.run(
        [sys.executable, '-c',
         'import placement_lite.app, placement_lite.migrations\n'
         'print(placement_lite.app.__file__)\n'
         'print(placement_lite.migrations.__file__)\n'],
        cwd=tree, env=dict(os.environ, PYTHONPATH=tree),
        capture_output=True, text=True, check=True)
    assert imported.stdout.split() == [
        os.path.join(tree, 'placement_lite', 'app.py'),
        os.path.join(tree, 'placement_lite', 'migrations', '__init__.py')]


def upgrade_with(tree, url):
    """Upgrade the database at ``url`` with the migrations of ``tree``, in
    a process of its own running that tree's code."""
    subprocess.run(
        [sys.executable, '-c',
         'import sys\n'
         'from placement_lite.db import api, migrate\n'
         'database = api.Database(sys.argv[1])\n'
         'migrate.upgrade(database)\n'
         'database.dispose()\n', url],
        cwd=tree, env=dict(os.environ, PYTHONPATH=tree), check=True)


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
    assert (status, body['uuid'], body['generation']) == (
        200, provider, 0), body
    status, body = request(
        'PUT', '/resource_providers/%s/inventories' % provider,
        {'resource_provider_generation': 0, 'inventories': {
            'VCPU': {'total': 8}, 'MEMORY_MB': {'total': 4096}}})
    assert (status, body['resource_provider_generation']) == (200, 1), body

    answer = claim_through('PUT', '/allocations/' + claimed, _claim(
        provider, VCPU=2, MEMORY_MB=1024))
    assert answer == (204, None), answer
    status, body = claim_through('PUT', '/allocations/' + refused, _claim(
        provider, VCPU=7, MEMORY_MB=1024))
    assert (status, body['errors'][0]['code']) == (
        409, 'placement.undefined_code'), body

    status, body = request(
        'GET', '/allocation_candidates?resources=VCPU:6,MEMORY_MB:3072'
        '&in_tree=%s' % provider, None)
    assert status == 200, body
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
