"""Replacing the reference with placement_lite behind a load balancer, and
going back, as docs/deploying.md says ("Replacing the reference without
downtime"), with etc/haproxy-placement-takeover.cfg and
etc/nginx-placement-takeover.conf as shipped, only their addresses
changed.

One host of each kind serves one PostgreSQL database: the reference
(openstack-placement 16.0.0, as tests/test_adopt_reference_database.py
starts it) and placement_lite (``uwsgi --ini etc/uwsgi.ini``, its HTTP
router). Which one answered a request is told by ``GET /``: the
reference's newest microversion is 1.39, placement_lite's 1.44.

Requests here are sent one at a time: these tests check the steps and
what each kind serves at each, not concurrent claims through both.
"""

import collections
import os
import re
import subprocess
import sys
import threading

import pytest
import sqlalchemy as sa

from placement_lite.db import api as db_api
from placement_lite.db import tables
from tests import harness
from tests import provision
from tests import releases
from tests import servers
from tests.bench import services

pytestmark = [pytest.mark.slow, pytest.mark.only_backends('postgresql')]

HAPROXY_TAKEOVER = os.path.join(servers.REPO, 'etc',
                                'haproxy-placement-takeover.cfg')
NGINX_TAKEOVER = os.path.join(servers.REPO, 'etc',
                              'nginx-placement-takeover.conf')
PLACEMENT_LITE = os.path.join(os.path.dirname(sys.executable),
                              'placement-lite')
REFERENCE_NEWEST = '1.39'
PLACEMENT_LITE_NEWEST = '1.44'
#: Requests sent to see which hosts answer.
SAMPLE = 12


@pytest.mark.needs('nginx', 'haproxy')
def test_the_takeover_files_are_valid(tmp_path):
    """``nginx -t`` (its log files moved into a temporary directory, which
    it would create) and ``haproxy -c`` accept the files as shipped."""
    with open(NGINX_TAKEOVER) as handle:
        text = handle.read().replace('/var/log/nginx/', '%s/' % tmp_path)
    text = text.replace('http {\n', 'http {\n' + ''.join(
        '    %s_temp_path %s/%s;\n' % (kind, tmp_path, kind)
        for kind in ('client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi')), 1)
    (tmp_path / 'nginx.conf').write_text(text)

    nginx = subprocess.run(
        [provision.require('nginx')['nginx'], '-t', '-p', str(tmp_path),
         '-c', str(tmp_path / 'nginx.conf'), '-g',
         'pid %s/nginx.pid; error_log %s/error.log;' % (tmp_path, tmp_path)],
        capture_output=True, text=True)
    haproxy = subprocess.run(
        [provision.require('haproxy')['haproxy'], '-c', '-f',
         HAPROXY_TAKEOVER], capture_output=True, text=True)

    assert nginx.returncode == 0, nginx.stderr
    assert 'test is successful' in nginx.stderr
    assert (haproxy.returncode, haproxy.stdout) == (
        0, 'Configuration file is valid\n'), haproxy.stderr


def _takeover_haproxy(reference_port, lite_port):
    """etc/haproxy-placement-takeover.cfg in front of one host of each
    kind: the second host of each kind left out."""
    return servers.HAProxyFront({'reference1': reference_port,
                                 'lite1': lite_port},
                                source=HAPROXY_TAKEOVER)


def _sessions(proxy, server):
    """The requests ``server`` of the backend is handling (``show stat``'s
    scur)."""
    return int(proxy.servers()[server]['scur'])


def _answering(port, count=SAMPLE):
    """{newest microversion: how many of ``count`` GET / were answered by
    a host serving it} through the front at ``port``."""
    answered = collections.Counter()
    for _ in range(count):
        status, body = servers.request(port, 'GET', '/')
        assert status == 200, body
        answered[body['versions'][0]['max_version']] += 1
    return dict(answered)


def _through(port):
    """A releases.assert_serves request function through the front at
    ``port``."""
    def request(method, path, body):
        return servers.request(port, method, path, body,
                               version=releases.VERSION)
    return request


def _reference(url, directory):
    """The reference's host, serving ``url`` (whose schema its
    ``placement-manage db sync`` creates), started."""
    reference = services.reference(
        harness._free_port(), url, str(directory / 'reference'),
        services.reference_venv(log=lambda _message: None), processes=1)
    reference.start()
    return reference


def _db_sync(reference):
    """``placement-lite db sync`` with the reference's placement.conf."""
    return subprocess.run(
        [PLACEMENT_LITE, 'db', 'sync'], capture_output=True, text=True,
        env=dict(os.environ, OS_PLACEMENT_CONFIG_DIR=reference.workdir))


def _serving_meanwhile(port, work):
    """Serve (releases.assert_serves) through ``port`` over and over while
    ``work()`` runs, and at least once: (times served, failures)."""
    done = threading.Event()
    outcomes = []

    def serve():
        while not (done.is_set() and outcomes):
            try:
                releases.assert_serves(_through(port))
                outcomes.append(None)
            except Exception as exc:  # reported by the test
                outcomes.append(exc)

    serving = threading.Thread(target=serve)
    serving.start()
    try:
        work()
    finally:
        done.set()
        serving.join(60)
    failed = [outcome for outcome in outcomes if outcome is not None]
    return len(outcomes) - len(failed), failed


def _device_profile_request(port, name):
    """POST /device_profiles (1.40, an extension) through the front."""
    return servers.request(port, 'POST', '/device_profiles', [{
        'name': name, 'groups': [{'resources:VCPU': '1'}]}],
        version='1.40')


def _device_profile_names(url):
    database = db_api.Database(url)
    try:
        with database.reader() as conn:
            return conn.execute(sa.select(
                tables.device_profiles.c.name)).scalars().all()
    finally:
        database.dispose()


Fleet = collections.namedtuple('Fleet', 'url reference lite')


@pytest.fixture
def synced(backend, tmp_path):
    """Step 1 done: the reference's host serving, placement_lite's db sync
    run while it served (claims through the reference meanwhile, each
    answered as it should be), and placement_lite's host started, in no
    front yet."""
    url = harness.empty_database_url(backend)
    reference = _reference(url, tmp_path)
    lite = None
    try:
        synced = []
        served, failed = _serving_meanwhile(
            reference.port, lambda: synced.append(_db_sync(reference)))
        assert synced[0].returncode == 0, synced[0].stderr
        assert (served >= 1, failed) == (True, [])
        lite = servers.Uwsgi(url, processes=2)
        yield Fleet(url, reference, lite)
    finally:
        if lite is not None:
            lite.cleanup()
        reference.stop()


@pytest.mark.needs('haproxy')
def test_a_takeover_and_a_rollback_behind_haproxy(synced):
    reference, lite = synced.reference, synced.lite
    proxy = _takeover_haproxy(reference.port, lite.port)
    try:
        # 2. placement_lite's host put in service beside the reference's.
        assert _answering(proxy.port) == {REFERENCE_NEWEST: SAMPLE}
        proxy.admin('set server placement/lite1 state ready')
        assert harness.wait_for(
            lambda: len(_answering(proxy.port)) == 2, timeout=30)
        for _ in range(3):
            releases.assert_serves(_through(proxy.port))
        proxy.admin('set server placement/lite1 weight 30')
        assert proxy.admin('get weight placement/lite1') == (
            '30 (initial 10)\n\n')

        # 3. The reference's host drained, then out: placement_lite alone.
        proxy.admin('set server placement/reference1 state drain')
        assert _answering(proxy.port) == {PLACEMENT_LITE_NEWEST: SAMPLE}
        assert _sessions(proxy, 'reference1') == 0
        proxy.admin('set server placement/reference1 state maint')
        reference.stop()
        releases.assert_serves(_through(proxy.port))
        assert _device_profile_request(proxy.port, 'fpga')[0] == 201

        # Rollback: the reference's host back, placement_lite's drained.
        reference.start()
        proxy.admin('set server placement/reference1 state ready')
        assert harness.wait_for(
            lambda: REFERENCE_NEWEST in _answering(proxy.port), timeout=30)
        proxy.admin('set server placement/lite1 state drain')
        assert _answering(proxy.port) == {REFERENCE_NEWEST: SAMPLE}
        releases.assert_serves(_through(proxy.port))
        assert _device_profile_request(proxy.port, 'gpu')[0] == 406
        assert servers.request(proxy.port, 'GET', '/device_profiles',
                               version=REFERENCE_NEWEST)[0] == 404
        assert _device_profile_names(synced.url) == ['fpga']
        assert lite.problems_in_log() == []
    finally:
        proxy.stop()


@pytest.mark.needs('nginx')
def test_a_takeover_and_a_rollback_behind_nginx(synced):
    """Each step an edit of the upstream block and a reload."""
    reference, lite = synced.reference, synced.lite
    with open(NGINX_TAKEOVER) as handle:
        shipped = servers.upstream_lines(handle.read())
    reference_line, _, lite_line, _, down_line = shipped

    def at(line, port):
        return re.sub(r' \S+:\d+', ' 127.0.0.1:%d' % port, line, count=1)

    front = servers.Nginx(source=NGINX_TAKEOVER, upstream=[
        at(reference_line, reference.port), at(lite_line, lite.port)])
    try:
        assert set(_answering(front.port)) == {REFERENCE_NEWEST,
                                               PLACEMENT_LITE_NEWEST}
        for _ in range(3):
            releases.assert_serves(_through(front.port))

        front.reload([at(down_line, reference.port),
                      at(lite_line, lite.port)])
        assert harness.wait_for(
            lambda: _answering(front.port) == {PLACEMENT_LITE_NEWEST: SAMPLE},
            timeout=30)
        reference.stop()
        releases.assert_serves(_through(front.port))

        reference.start()
        front.reload([at(reference_line, reference.port),
                      at(down_line, lite.port)])
        assert harness.wait_for(
            lambda: _answering(front.port) == {REFERENCE_NEWEST: SAMPLE},
            timeout=30)
        releases.assert_serves(_through(front.port))
        assert lite.problems_in_log() == []
    finally:
        front.stop()
