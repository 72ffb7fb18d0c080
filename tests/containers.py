"""placement_lite's container image (Containerfile), built from this
checkout and run with podman, for tests/test_container.py.

podman runs as Debian's 4.3 runs on the project's machines: with runc,
cgroupfs and explicit limits (its default ones are refused), from a
containers.conf of this module's (:func:`podman`). No image registry is
reached: the base image is Debian's own Python, made by debootstrap once
and kept under ``.bench/`` and in podman's storage (:func:`base_image`).
The image is built once per test process, by one process at a time
(:func:`image`): podman's layer cache makes a build of a tree already
built take seconds, and the dependencies' layer is built again only when
pyproject.toml or the base changes.

Every container uses the host's network, so that it reaches the suite's
PostgreSQL on 127.0.0.1 and is reached there: each is told its own port.
"""

import contextlib
import fcntl
import hashlib
import itertools
import json
import os
import re
import shutil
import subprocess
import tempfile
import time

from tests import harness
from tests import provision
from tests import servers

REPO = servers.REPO
BENCH_DIR = os.path.join(REPO, '.bench')
BASE_DIR = os.path.join(BENCH_DIR, 'container-base')
BASE = 'localhost/placement-lite-base:bookworm'
#: One tag per checkout: the machine's podman storage is shared.
IMAGE = 'localhost/placement-lite:tests-%s' % hashlib.sha1(
    REPO.encode()).hexdigest()[:8]
#: The user the image runs as: kolla's placement user.
UID = 42482
#: How long a stop may take: the drain's grace period and timeout (5 +
#: 30 s) and the longest request, as the Deployment's
#: terminationGracePeriodSeconds (etc/kubernetes/placement-api.yaml).
STOP_TIMEOUT = 60
CONTAINERS_CONF = '''[containers]
default_ulimits = ["nofile=20000:20000", "nproc=4096:4096"]
[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
'''
_names = itertools.count()
_built = None


def podman(*args, check=True, timeout=600, **kwargs):
    """The finished ``podman ARGS``, its output as text; a RuntimeError
    with its output when it failed and ``check``."""
    path = os.path.join(BENCH_DIR, 'containers.conf')
    os.makedirs(BENCH_DIR, exist_ok=True)
    if not os.path.exists(path) or open(path).read() != CONTAINERS_CONF:
        with open(path + '.new', 'w') as conf:
            conf.write(CONTAINERS_CONF)
        os.replace(path + '.new', path)
    done = subprocess.run(
        [provision.require('podman')['podman'], *args], capture_output=True,
        text=True, timeout=timeout,
        env=dict(os.environ, CONTAINERS_CONF=path), **kwargs)
    if check and done.returncode:
        raise RuntimeError('podman %s failed (%d):\n%s%s' % (
            ' '.join(args), done.returncode, done.stdout[-3000:],
            done.stderr[-3000:]))
    return done


@contextlib.contextmanager
def _locked(name):
    """Held by one process at a time: test workers may all ask at once."""
    os.makedirs(BENCH_DIR, exist_ok=True)
    with open(os.path.join(BENCH_DIR, name + '.lock'), 'w') as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def base_image(log=print):
    """BASE, made when podman does not have it: Debian bookworm with its
    Python (``debootstrap --variant=minbase``), its package lists removed,
    imported from BASE_DIR (made once, kept)."""
    with _locked('container-base'):
        if podman('image', 'exists', BASE, check=False).returncode == 0:
            return BASE
        root = os.path.join(BASE_DIR, 'root')
        done = os.path.join(BASE_DIR, 'done')
        if not os.path.exists(done):
            log('making %s with debootstrap (about 2 minutes)' % root)
            shutil.rmtree(BASE_DIR, ignore_errors=True)
            os.makedirs(BASE_DIR)
            made = subprocess.run(
                [provision.require('debootstrap')['debootstrap'],
                 '--variant=minbase', '--include=python3,python3-venv',
                 'bookworm', root], capture_output=True, text=True)
            if made.returncode:
                raise RuntimeError('debootstrap failed:\n'
                                   + made.stdout[-3000:] + made.stderr)
            for listed in ('var/lib/apt/lists', 'var/cache/apt'):
                for entry in os.scandir(os.path.join(root, listed)):
                    if entry.is_file():
                        os.unlink(entry.path)
            open(done, 'w').close()
        tar = subprocess.Popen(['tar', '-C', root, '-c', '.'],
                               stdout=subprocess.PIPE)
        try:
            podman('import', '-', BASE, stdin=tar.stdout)
        finally:
            tar.stdout.close()
            tar.wait()
        return BASE


def build_args():
    """The build's options that let pip in it reach the index pip on this
    host reaches: its index URLs (those over HTTP) as build arguments, its
    certificate authorities as the secret pip-cert."""
    options = []
    config = subprocess.run(
        [os.path.join(servers.BIN, 'pip'), 'config', 'list'],
        capture_output=True, text=True).stdout
    settings = dict(re.findall(r"^(?:global|install)\.([\w-]+)='(.*)'$",
                               config, re.M))
    for setting, argument in (('index-url', 'PIP_INDEX_URL'),
                              ('extra-index-url', 'PIP_EXTRA_INDEX_URL'),
                              ('trusted-host', 'PIP_TRUSTED_HOST')):
        values = [value for value in settings.get(setting, '').split()
                  if setting == 'trusted-host' or value.startswith('http')]
        if values:
            options += ['--build-arg', '%s=%s' % (argument, ' '.join(values))]
    cert = os.environ.get('PIP_CERT') or settings.get('cert')
    if cert and os.path.exists(cert):
        options += ['--secret', 'id=pip-cert,src=%s' % cert]
    return options


def version():
    """The version pyproject.toml gives."""
    with open(os.path.join(REPO, 'pyproject.toml')) as handle:
        return re.search(r'^version = "(.+)"$', handle.read(), re.M).group(1)


def commit():
    return subprocess.run(['git', 'rev-parse', 'HEAD'], cwd=REPO, check=True,
                          capture_output=True, text=True).stdout.strip()


def image(log=print):
    """IMAGE built from this checkout on BASE, once in this process:
    (the image, the seconds the build took)."""
    global _built
    if _built is None:
        base = base_image(log)
        with _locked('container-image'):
            started = time.monotonic()
            podman('build', '--format', 'docker', '--network', 'host',
                   '--build-arg', 'BASE=' + base,
                   '--build-arg', 'VERSION=' + version(),
                   '--build-arg', 'COMMIT=' + commit(),
                   *build_args(), '-t', IMAGE, REPO, timeout=1800)
            _built = (IMAGE, time.monotonic() - started)
    return _built


def cannot_run():
    """Why podman cannot run a container here, or None when it can."""
    try:
        done = podman('run', '--rm', '--network', 'host', base_image(),
                      'true', check=False, timeout=300)
    except (RuntimeError, OSError, subprocess.SubprocessError) as error:
        return str(error)
    if done.returncode:
        return 'podman run failed: ' + done.stderr.strip()[-500:]
    return None


class Container:
    """One container of the image on the host's network, its
    placement.conf (noauth2, ``db_url``, ``extra_conf`` appended) mounted
    read-only at /etc/placement, its root read-only and /tmp a tmpfs, as
    etc/kubernetes/placement-api.yaml runs it. ``args``: the image's
    (etc/container/entrypoint.sh: ``router``, ``behind-nginx``, or a
    command); ``options``: podman run's, more."""

    def __init__(self, db_url, args=(), extra_conf='', options=(),
                 port=None):
        self.name = 'placement-lite-test-%d-%d' % (os.getpid(),
                                                   next(_names))
        self.port = port or harness._free_port()
        self.behind_nginx = list(args[:1]) == ['behind-nginx']
        self.confdir = tempfile.mkdtemp(prefix='placement-lite-container-')
        os.chmod(self.confdir, 0o755)
        servers.write_placement_conf(self.confdir, db_url, extra_conf)
        os.chmod(os.path.join(self.confdir, 'placement.conf'), 0o644)
        self.command = [
            'run', '--name', self.name, '--network', 'host',
            '--read-only', '--read-only-tmpfs=false', '--tmpfs', '/tmp',
            '--stop-timeout', str(STOP_TIMEOUT),
            '--env', 'PLACEMENT_LITE_HTTP_ADDRESS=127.0.0.1:%d' % self.port,
            '--env', 'PLACEMENT_LITE_UWSGI_ADDRESS=127.0.0.1:%d' % self.port,
            '--volume', '%s:/etc/placement:ro' % self.confdir,
            *options, image()[0], *args]

    def run(self, timeout=300):
        """Run it to its end: the finished ``podman run``."""
        return podman(*self.command, check=False, timeout=timeout)

    def start(self):
        """Start it, and wait until /healthcheck answers 200."""
        podman(*self.command[:1], '--detach', *self.command[1:])
        self.wait_ready()

    def wait_ready(self, timeout=120):
        """Wait until /healthcheck answers 200: over HTTP, or the image's
        HEALTHCHECK in the container on the behind-nginx line."""
        def ready():
            if self.state()['Status'] != 'running':
                raise RuntimeError('%s ended:\n%s' % (self.name, self.logs()))
            if self.behind_nginx:
                return self.exec('placement-lite-healthcheck').returncode == 0
            try:
                return servers.request(self.port, 'GET', '/healthcheck',
                                       timeout=5)[0] == 200
            except OSError:
                return False
        if not harness.wait_for(ready, timeout=timeout):
            raise RuntimeError('%s did not answer:\n%s'
                               % (self.name, self.logs()))

    def stop(self):
        """``podman stop`` (SIGTERM to PID 1); the seconds it took."""
        started = time.monotonic()
        podman('stop', '--time', str(STOP_TIMEOUT), self.name,
               timeout=STOP_TIMEOUT + 60)
        return time.monotonic() - started

    def start_again(self):
        """Start it again once stopped, and wait until it answers."""
        podman('start', self.name)
        self.wait_ready()

    def state(self):
        return json.loads(podman('inspect', '--format', '{{json .State}}',
                                 self.name).stdout)

    def logs(self):
        done = podman('logs', self.name, check=False)
        return done.stdout + done.stderr

    def exec(self, *command):
        return podman('exec', self.name, *command, check=False)

    def problems_in_log(self):
        return servers.problems_in(self.logs())

    def remove(self):
        podman('rm', '--force', '--time', '0', self.name, check=False)
        shutil.rmtree(self.confdir, ignore_errors=True)
