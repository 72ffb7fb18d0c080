"""The container image (Containerfile), built from this checkout and run
with podman on the suite's PostgreSQL (tests/containers.py), as
Kubernetes-based deployments run Placement:

- ``placement-lite db sync`` and ``status`` as one-shot containers;
- the router line answering gabbi files as the in-process app does;
- two containers restarted in turn under load behind HAProxy's readiness
  checks: SIGTERM to PID 1 (``podman stop``) drains each, no request
  fails, every acknowledged write is in the database;
- the non-root user, the read-only root, the HEALTHCHECK, the labels;
- the manifests of etc/kubernetes/ played by ``podman kube play``.

Skipped, saying why, where podman cannot run a container.
"""

import copy
import os

import pytest
import yaml

from placement_lite.db import api as db_api
from placement_lite.db import migrate
from tests import claims
from tests import containers
from tests import gabbi_runner
from tests import harness
from tests import rolling_restart
from tests import servers

pytestmark = [pytest.mark.slow,
              pytest.mark.needs('postgresql', 'podman', 'runc', 'catatonit',
                                'debootstrap')]

GABBITS = os.path.join(servers.REPO, 'gabbits')
#: Files of gabbits/ the container answers, one container each: every
#: kind of write, the claims, the errors' format, the microversions.
GABBI_FILES = ('resource-providers.yaml', 'inventories.yaml',
               'allocations-put.yaml', 'allocation-claims.yaml',
               'traits.yaml', 'usages.yaml', 'error-formats.yaml',
               'microversion.yaml')
KUBERNETES = os.path.join(servers.REPO, 'etc', 'kubernetes')
#: [api] drain_grace_period of the image's placement.conf, the default.
GRACE_PERIOD = 5.0
PROCESSES = '2'
#: Restarts of each container in the rolling restart.
ROUNDS = 2


@pytest.fixture(scope='module')
def image():
    reason = containers.cannot_run()
    if reason:
        pytest.skip('podman cannot run a container here: %s' % reason)
    built, seconds = containers.image()
    print('\nimage built in %.1f s' % seconds)
    return built


@pytest.fixture
def database():
    db = harness.fresh_database('postgresql')
    yield db
    db.dispose()


@pytest.fixture
def started():
    """started(db_url, ...): a Container started (its arguments), removed
    after the test."""
    made = []

    def start(db_url, *args, **kwargs):
        container = containers.Container(db_url, *args, **kwargs)
        made.append(container)
        container.start()
        return container
    yield start
    for container in made:
        container.remove()


def test_db_sync_and_status_are_one_shot_commands(image):
    url = harness.empty_database_url('postgresql')
    sync = containers.Container(url, ['placement-lite', 'db', 'sync'])
    status = containers.Container(url, ['placement-lite', 'status'])
    try:
        synced = sync.run()
        assert synced.returncode == 0, synced.stdout + synced.stderr
        db = db_api.Database(url)
        try:
            assert migrate.current_revision(db) == migrate.head_revision()
        finally:
            db.dispose()
        checked = status.run()
        assert checked.returncode == 0, checked.stdout + checked.stderr
        assert 'Result: Failure' not in checked.stdout
        assert checked.stdout.count('Result: Success') >= 3
    finally:
        sync.remove()
        status.remove()


@pytest.mark.parametrize('name', GABBI_FILES)
def test_the_router_line_answers_a_gabbi_file(image, started, name):
    db = harness.fresh_database('postgresql')
    try:
        container = started(db.url, ['router', '--processes', PROCESSES])
        outcomes = gabbi_runner.run_file_live(
            os.path.join(GABBITS, name), '127.0.0.1', container.port)
    finally:
        db.dispose()
    assert outcomes, 'no requests ran'
    failures = [o for o in outcomes if o.status in ('failed', 'error')]
    assert not failures, '\n\n'.join(
        '%s: %s\n%s' % (o.name, o.status, o.message) for o in failures)
    assert container.problems_in_log() == []


class _Front:
    """HAProxy (etc/haproxy-placement.cfg) in front of containers, as a
    Service with readiness probes is in front of a Deployment's pods."""

    def __init__(self, hosts):
        self.hosts = hosts
        self.haproxy = servers.HAProxyFront(
            {'api%d' % index: host.port
             for index, host in enumerate(hosts, 1)})
        self.port = self.haproxy.port

    def roll(self):
        """Restart each container in turn, ROUNDS times, waiting until
        HAProxy has it back: (seconds, exit code) of each stop."""
        stops = []
        for _round in range(ROUNDS):
            for index, host in enumerate(self.hosts):
                stops.append((host.stop(), host.state()['ExitCode']))
                host.start_again()
                name = self.haproxy.names[index]
                assert harness.wait_for(
                    lambda: self.haproxy.servers()[name]['status'] == 'UP',
                    timeout=60), '%s not back' % name
        return stops

    def sent_again(self):
        return sum(int(row['wretr']) + int(row['wredis'])
                   for row in self.haproxy.servers().values())


@pytest.mark.needs('haproxy')
def test_two_containers_restarted_in_turn_under_load(image, started,
                                                     database):
    hosts = [started(database.url, ['router', '--processes', PROCESSES])
             for _host in range(2)]
    front = _Front(hosts)
    try:
        stops = []
        outcome = rolling_restart.under_load(
            front, lambda: stops.extend(front.roll()))
        sent_again = front.sent_again()
    finally:
        front.haproxy.stop()
    print('\n%s; stops (seconds, exit code): %s' % (
        rolling_restart.summary(outcome.answers),
        ', '.join('%.1f, %d' % stop for stop in stops)))
    assert rolling_restart.failed(outcome.answers) == []
    rolling_restart.assert_nothing_lost(database, outcome)
    # /healthcheck took each stopping container out during its grace
    # period: HAProxy sent nothing to one that could no longer serve it.
    assert sent_again == 0
    # Each stop was a drain: the grace period served, every worker done
    # with what it had accepted, uwsgi's master (PID 1) ending cleanly.
    assert len(stops) == ROUNDS * len(hosts)
    assert all(GRACE_PERIOD <= seconds < containers.STOP_TIMEOUT and code == 0
               for seconds, code in stops), stops
    for host in hosts:
        assert host.logs().count('Every accepted request answered') == (
            ROUNDS * int(PROCESSES)), host.logs()
        assert host.problems_in_log() == []


def test_non_root_read_only_root_healthcheck_and_labels(image, started,
                                                        database):
    router = started(database.url, ['router', '--processes', PROCESSES])
    behind_nginx = started(database.url,
                           ['behind-nginx', '--processes', PROCESSES])
    # Writes, served with nothing writable but /tmp.
    providers = claims.create_providers(router.port, count=2)
    assert len(providers) == 2
    for container in (router, behind_nginx):
        assert container.exec('id', '-u').stdout.strip() == str(
            containers.UID)
        status = container.exec('cat', '/proc/1/status').stdout
        assert 'Uid:\t%d\t' % containers.UID in status
        assert container.exec('touch', '/etc/placement-lite').returncode
        health = containers.podman('healthcheck', 'run', container.name,
                                   check=False)
        assert health.returncode == 0, health.stdout + health.stderr
        assert container.problems_in_log() == []
    config = containers.podman('image', 'inspect', '--format',
                               '{{json .Config}}', image).stdout
    config = yaml.safe_load(config)
    assert config['User'] == 'placement'
    assert config['Labels']['org.opencontainers.image.version'] == (
        containers.version())
    assert config['Labels']['org.opencontainers.image.revision'] == (
        containers.commit())
    healthcheck = containers.podman('image', 'inspect', '--format',
                                    '{{json .HealthCheck}}', image).stdout
    assert yaml.safe_load(healthcheck)['Test'] == [
        'CMD', 'placement-lite-healthcheck']


def _manifests():
    documents = []
    for name in ('placement-config', 'placement-db-sync', 'placement-api'):
        with open(os.path.join(KUBERNETES, name + '.yaml')) as handle:
            documents += [document for document in yaml.safe_load_all(handle)]
    return {document['kind']: document for document in documents}


def _played(manifests, image, db_url, port):
    """The manifests as `podman kube play` runs them here: the image, the
    database and noauth2 given, the router on its own port of the host's
    network (no port mappings there), one replica. What podman 4.3 cannot
    play is made of what it can: the Job's pod is a Pod; the Secret is a
    ConfigMap of the same name and files, its volume a ConfigMap's (4.3
    writes a Secret's files base64-encoded)."""
    config = copy.deepcopy(manifests['ConfigMap'])
    config['data']['placement.conf'] = config['data'][
        'placement.conf'].replace('auth_strategy = keystone',
                                  'auth_strategy = noauth2')
    secret = {'apiVersion': 'v1', 'kind': 'ConfigMap',
              'metadata': manifests['Secret']['metadata'],
              'data': {name: '[placement_database]\nconnection = %s\n'
                       % db_url
                       for name in manifests['Secret']['stringData']}}
    deployment = copy.deepcopy(manifests['Deployment'])
    deployment['spec']['replicas'] = 1
    job = manifests['Job']
    sync = {'apiVersion': 'v1', 'kind': 'Pod',
            'metadata': {'name': job['metadata']['name']},
            'spec': dict(copy.deepcopy(job['spec']['template']['spec']),
                         restartPolicy='Never')}
    for pod in (deployment['spec']['template']['spec'], sync['spec']):
        for volume in pod['volumes']:
            if 'secret' in volume:
                volume['configMap'] = {
                    'name': volume.pop('secret')['secretName']}
        for container in pod['containers']:
            container['image'] = image
            container.pop('ports', None)
            container['env'] = [{'name': 'PLACEMENT_LITE_HTTP_ADDRESS',
                                 'value': '127.0.0.1:%d' % port}]
            for probe in ('readinessProbe', 'startupProbe', 'livenessProbe'):
                if probe in container:
                    container[probe]['httpGet']['port'] = port
    return config, secret, sync, deployment


def test_the_kubernetes_manifests_played(image, tmp_path):
    url = harness.empty_database_url('postgresql')
    port = harness._free_port()
    config, secret, sync, deployment = _played(_manifests(), image, url, port)
    files = {}
    for name, documents in (('sync', [config, secret, sync]),
                            ('api', [config, secret, deployment])):
        files[name] = str(tmp_path / (name + '.yaml'))
        with open(files[name], 'w') as handle:
            yaml.safe_dump_all(documents, handle)
    try:
        containers.podman('kube', 'play', '--network', 'host', files['sync'])
        name = '%s-%s' % (sync['metadata']['name'],
                          sync['spec']['containers'][0]['name'])
        exited = containers.podman('wait', name, timeout=300).stdout.strip()
        assert exited == '0', containers.podman('logs', name).stderr
        db = db_api.Database(url)
        try:
            assert migrate.current_revision(db) == migrate.head_revision()
        finally:
            db.dispose()

        containers.podman('kube', 'play', '--network', 'host', files['api'])
        assert harness.wait_for(lambda: _answers(port), timeout=120)
        providers = claims.create_providers(port, count=1)
        assert len(providers) == 1
        pod = deployment['spec']['template']['spec']
        name = '%s-pod-0-%s' % (deployment['metadata']['name'],
                                pod['containers'][0]['name'])
        inspected, = yaml.safe_load(
            containers.podman('inspect', name).stdout)
        assert inspected['HostConfig']['ReadonlyRootfs'] is True
        assert inspected['Config']['User'] == '%d:%d' % (
            containers.UID, containers.UID)
    finally:
        for path in files.values():
            containers.podman('kube', 'down', path, check=False)


def _answers(port):
    try:
        return servers.request(port, 'GET', '/healthcheck', timeout=5)[0] == 200
    except OSError:
        return False
