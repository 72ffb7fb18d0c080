"""``placement-lite status``: the upgrade checks an operator runs, their
table and exit code (0 ready, 1 warning, 2 failure), on each backend."""

import json
import os
import subprocess
import sys

import os_resource_classes
import os_traits
import pytest
import sqlalchemy as sa

from placement_lite.db import migrate
from placement_lite.db import tables
from tests import harness
from tests import releases

pytestmark = pytest.mark.slow

PLACEMENT_LITE = os.path.join(os.path.dirname(sys.executable),
                              'placement-lite')
NOT_CHECKED = ('Warning', 'Not checked: the database schema is not current.')
PROVIDER = '5a7e0000-0000-4000-8000-000000000001'


def _status(tmp_path, db_url):
    """(exit code, {check: (result, details)}) of placement-lite status."""
    config = tmp_path / 'placement.conf'
    config.write_text('[placement_database]\nconnection = %s\n' % db_url)
    done = subprocess.run(
        [PLACEMENT_LITE, '--config-file', str(config), 'status'],
        capture_output=True, text=True, timeout=120)
    return done.returncode, _table(done.stdout)


def _table(text):
    """The checks of oslo.upgradecheck's table; wrapped details joined."""
    checks = {}
    for cell in text.split('\n+')[1:]:
        lines = [line.strip('| ').rstrip() for line in cell.splitlines()[1:]]
        fields = {}
        for line in lines:
            key, sep, value = line.partition(': ')
            if sep and key in ('Check', 'Result', 'Details'):
                fields[key] = value
            elif line:
                fields['Details'] += ' ' + line
        if fields:
            checks[fields['Check']] = (fields['Result'], fields['Details'])
    return checks


def _cloud(db_url):
    """A provider with two consumers' allocations, made through the API."""
    env = harness.Environment('postgresql' if 'postgresql' in db_url
                              else 'sqlite', database_url=db_url)
    try:
        assert env.request('POST', '/resource_providers', {
            'name': 'host', 'uuid': PROVIDER}, version='1.20')[0] == 200
        assert env.request('PUT', '/resource_providers/%s/inventories' % PROVIDER, {
            'resource_provider_generation': 0,
            'inventories': {'VCPU': {'total': 8}}})[0] == 200
        for index in (1, 2):
            consumer = '5a7e0000-0000-4000-8000-00000000010%d' % index
            assert env.request('PUT', '/allocations/' + consumer, {
                'allocations': {PROVIDER: {'resources': {'VCPU': 1}}},
                'project_id': 'p', 'user_id': 'u',
                'consumer_generation': None}, version='1.28')[0] == 204
    finally:
        env.close()


def _execute(db_url, statement):
    engine = sa.create_engine(db_url)
    try:
        with engine.begin() as conn:
            conn.execute(statement)
    finally:
        engine.dispose()


def test_a_database_without_the_schema_fails(backend, tmp_path):
    code, checks = _status(tmp_path, harness.empty_database_url(backend))

    assert code == 2
    assert checks == {
        'Database schema': (
            'Failure', 'The database has no placement_lite schema, not %s. '
            'Run "placement-lite db sync".' % migrate.head_revision()),
        'Standard resource classes and traits': NOT_CHECKED,
        'Missing Root Provider IDs': NOT_CHECKED,
        'Incomplete Consumers': NOT_CHECKED,
        'Consumers without allocations': NOT_CHECKED,
        'Policy File JSON to YAML Migration': ('Success', 'None'),
    }


def test_a_synced_database_in_use_passes(backend, tmp_path):
    db = harness.fresh_database(backend)
    db_url = db.engine.url.render_as_string(hide_password=False)
    db.dispose()
    _cloud(db_url)

    code, checks = _status(tmp_path, db_url)

    assert code == 0
    assert set(checks.values()) == {('Success', 'None')}
    assert len(checks) == 6


def test_consumers_left_inconsistent_are_warnings(backend, tmp_path):
    db = harness.fresh_database(backend)
    db_url = db.engine.url.render_as_string(hide_password=False)
    db.dispose()
    _cloud(db_url)
    consumers, allocations = tables.consumers, tables.allocations
    # The first consumer's record lost, the second's allocations lost.
    _execute(db_url, consumers.delete().where(
        consumers.c.uuid == '5a7e0000-0000-4000-8000-000000000101'))
    _execute(db_url, allocations.delete().where(
        allocations.c.consumer_id == '5a7e0000-0000-4000-8000-000000000102'))

    code, checks = _status(tmp_path, db_url)

    assert code == 1
    assert checks['Incomplete Consumers'] == (
        'Warning', '1 consumers hold allocations but have no consumer record '
        '(no project, user or generation). Run the reference\'s '
        '"placement-manage db online_data_migrations" to create them.')
    assert checks['Consumers without allocations'] == (
        'Warning', '1 consumers hold no allocation; the API removes a '
        'consumer with its last allocation, so something else left them.')


def test_a_provider_without_root_and_a_json_policy_fail(backend, tmp_path):
    db = harness.fresh_database(backend)
    db_url = db.engine.url.render_as_string(hide_password=False)
    db.dispose()
    _cloud(db_url)
    providers = tables.resource_providers
    _execute(db_url, providers.update().values(root_provider_id=None))
    (tmp_path / 'policy.json').write_text(json.dumps({}))
    config_extra = '[oslo_policy]\npolicy_file = policy.json\n'

    config = tmp_path / 'placement.conf'
    config.write_text('[placement_database]\nconnection = %s\n%s'
                      % (db_url, config_extra))
    done = subprocess.run(
        [PLACEMENT_LITE, '--config-file', str(config), 'status'],
        capture_output=True, text=True, timeout=120)
    checks = _table(done.stdout)

    assert done.returncode == 2
    assert checks['Missing Root Provider IDs'] == (
        'Failure', '1 resource providers have no root provider id. Run the '
        'reference\'s "placement-manage db online_data_migrations" before '
        'switching.')
    assert checks['Policy File JSON to YAML Migration'][0] == 'Failure'


def test_a_database_a_newer_release_migrated_is_a_warning(backend, tmp_path):
    """After a rollback: this release serves on it (docs/databases.md,
    "Expand and contract"), and its other checks run."""
    db_url = releases.migrated_by_a_newer_release(backend, str(tmp_path))

    code, checks = _status(tmp_path, db_url)

    assert code == 1
    assert checks == {
        'Database schema': (
            'Warning', 'The database is at revision %s, which a newer '
            'release recorded (this release knows up to %s). This release '
            'serves on it as it is when it is the release before the one '
            'that migrated it (a rollback).' % (
                releases.NEWER_REVISION, migrate.head_revision())),
        'Standard resource classes and traits': (
            'Success', '%d standard resource classes and %d standard traits '
            'are not in the database yet; the service adds them when it '
            'starts.' % (len(os_resource_classes.STANDARDS),
                         len(os_traits.get_traits()))),
        'Missing Root Provider IDs': ('Success', 'None'),
        'Incomplete Consumers': ('Success', 'None'),
        'Consumers without allocations': ('Success', 'None'),
        'Policy File JSON to YAML Migration': ('Success', 'None'),
    }
