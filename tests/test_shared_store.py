"""Lazy workers keep one copy of the cloud per host (db/cloud/shared.py).

Under ``lazy-apps`` the first worker to start reads the cloud and writes
what it keeps to /dev/shm; the others map those files. Every worker then
patches its own pages as it sees writes: each must answer as a process
that read the database afresh, after every kind of write.
"""

import glob
import os
import re
import signal
import time

import pytest

from placement_lite.db.cloud import shared
from tests import harness
from tests import servers
from tests.bench import builder
from tests.bench import cloud as bench_cloud

pytestmark = [pytest.mark.mysql, pytest.mark.slow]

HOSTS = 60
WORKERS = 3
VERSION = '1.39'
TRAIT = 'CUSTOM_SHARED_STORE'
QUERIES = [
    '/allocation_candidates?resources=VCPU:1,MEMORY_MB:512',
    '/allocation_candidates?resources=VCPU:2,MEMORY_MB:1024,DISK_GB:10'
    '&limit=3',
    '/allocation_candidates?resources=VCPU:1&required=%s' % TRAIT,
    '/allocation_candidates?resources=VCPU:1,MEMORY_MB:512'
    '&group_policy=none&resources1=SRIOV_NET_VF:1',
]


def _store_directories(master):
    return [path for path in glob.glob(os.path.join(
        shared.DIRECTORY, '%s%d-*' % (shared._PREFIX, master)))
        if os.path.isdir(path)]


def _mapped(pid, directory):
    """(kB mapped, kB of them the process's own) of the files in
    ``directory`` that process ``pid`` maps."""
    size = own = 0
    in_directory = False
    with open('/proc/%d/smaps' % pid) as smaps:
        for line in smaps:
            name, _colon, value = line.partition(':')
            if '-' in name and ' ' in name:
                in_directory = line.rstrip().endswith(tuple(
                    os.path.join(directory, file)
                    for file in os.listdir(directory)))
            elif in_directory and name == 'Size':
                size += int(value.split()[0])
            elif in_directory and name == 'Private_Dirty':
                own += int(value.split()[0])
    return size, own


def _respawned(server, workers):
    """The pid of the worker uwsgi spawned in place of one of ``workers``
    killed, once its application is built."""
    for _attempt in range(300):
        spawned = [int(pid) for pid in server.worker_pids()
                   if int(pid) not in workers
                   and os.path.exists('/proc/%s' % pid)]
        if spawned and re.search(r'\bready in .* pid: %d\b' % spawned[0],
                                 server.log_text()):
            return spawned[0]
        time.sleep(0.1)
    raise AssertionError(server.log_text())


def _without_request_ids(answer):
    status, body = answer
    for error in body.get('errors', []):
        error.pop('request_id')
    return status, body


def _fresh_answers(backend, url):
    environment = harness.Environment(backend, database_url=url)
    try:
        return [_without_request_ids(
            environment.request('GET', query, version=VERSION)[::2])
            for query in QUERIES]
    finally:
        environment.close()


def _stale(server, backend, url):
    """[(query, worker pid)] of the answers unlike a fresh process's."""
    expected = _fresh_answers(backend, url)
    return [(query, pid)
            for query, fresh in zip(QUERIES, expected)
            for pid, answers in server.answers_of_every_worker(
                query, VERSION).items()
            if any(_without_request_ids(answer) != fresh
                   for answer in answers)]


def _writes(port, numa_nodes):
    """(kind, status) of each kind of write, one after another."""
    numa, other = numa_nodes[0], numa_nodes[-1]

    def call(method, path, body=None, version=VERSION):
        return servers.request(port, method, path, body, version)

    def generation(uuid):
        return call('GET', '/resource_providers/%s' % uuid)[1]['generation']

    consumer = bench_cloud.make_uuid('shared-store-consumer')
    status, candidates = call('GET', QUERIES[0] + '&limit=1')
    assert status == 200
    claim = candidates['allocation_requests'][0]
    yield 'claim', call('PUT', '/allocations/%s' % consumer, {
        **claim, 'project_id': bench_cloud.make_uuid('project'),
        'user_id': bench_cloud.make_uuid('user'), 'consumer_generation': None,
        'consumer_type': 'INSTANCE'})[0]
    yield 'inventory', call(
        'PUT', '/resource_providers/%s/inventories/VCPU' % other, {
            'resource_provider_generation': generation(other), 'total': 512})[0]
    yield 'trait', call('PUT', '/traits/%s' % TRAIT)[0]
    yield 'traits', call('PUT', '/resource_providers/%s/traits' % numa, {
        'resource_provider_generation': generation(numa),
        'traits': [TRAIT]})[0]
    added = bench_cloud.make_uuid('shared-store-added')
    yield 'provider', call('POST', '/resource_providers', {
        'name': 'shared-store-added', 'uuid': added})[0]
    yield 'its inventory', call(
        'PUT', '/resource_providers/%s/inventories' % added, {
            'resource_provider_generation': 0, 'inventories': {
                'VCPU': {'total': 64}, 'MEMORY_MB': {'total': 65536}}})[0]
    yield 'its traits', call('PUT', '/resource_providers/%s/traits' % added, {
        'resource_provider_generation': 1, 'traits': [TRAIT]})[0]
    yield 'unclaim', call('DELETE', '/allocations/%s' % consumer)[0]
    yield 'delete', call('DELETE', '/resource_providers/%s' % added)[0]


def test_lazy_workers_map_one_store_and_see_every_write(backend):
    db = harness.fresh_database(backend)
    cloud = bench_cloud.build(HOSTS, storage_group_size=1)
    builder.write(db, cloud)
    db.dispose()
    numa_nodes = [provider.uuid for provider in cloud.providers
                  if 'VCPU' in provider.inventories]
    server = servers.Uwsgi(db.url, processes=WORKERS, lazy=True)
    try:
        master = server.process.pid
        [directory] = _store_directories(master)
        workers = sorted(int(pid) for pid in server.worker_pids())
        built = re.findall(r' INFO placement_lite\.db\.cloud\.shared .*'
                           r'kept cloud written', server.log_text())
        # One worker read the cloud and wrote it; each worker maps its
        # files (the columns, the rendered summaries) and, at rest, owns
        # none of the mapped pages.
        assert len(built) == 1, server.log_text()
        mapped = [_mapped(pid, directory) for pid in workers]
        assert [(size > 0, own) for size, own in mapped] == [
            (True, 0)] * WORKERS
        assert _stale(server, backend, db.url) == []
        stale = []
        for kind, status in _writes(server.port, numa_nodes):
            assert status in (200, 201, 204), (kind, status)
            stale += [(kind, *found)
                      for found in _stale(server, backend, db.url)]
        assert stale == []
        # A write copies only the pages it patched.
        assert [own < size for size, own in (
            _mapped(pid, directory) for pid in workers)] == [True] * WORKERS
        # A worker killed: the one spawned in its place maps the files as
        # they were written, before every write since, and answers as
        # fresh (its first read brings them up to date).
        os.kill(workers[0], signal.SIGKILL)
        respawned = _respawned(server, workers)
        assert _mapped(respawned, directory)[0] > 0
        assert _stale(server, backend, db.url) == []
        assert len(re.findall(r'kept cloud written',
                              server.log_text())) == 1
        assert server.problems_in_log() == []
        server.stop()
        # The last worker to exit removed the files.
        assert _store_directories(master) == []
    finally:
        server.cleanup()
