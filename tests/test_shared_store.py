"""Each uwsgi worker answers as a fresh process after every kind of write
(allocations, inventories, traits, aggregates, a subtree re-parented,
providers created and deleted, a resource class renamed), on both lines:

- pre-forked, as etc/uwsgi.ini ships: the master reads the cloud and
  forks the workers, which share its pages until each patches its own;
- ``lazy-apps``: workers keep one copy of the cloud per host
  (db/cloud/shared.py): the first worker to start reads the cloud and
  writes what it keeps to /dev/shm, the others map those files.

Each worker is asked every query (servers.Uwsgi.answers_of_every_worker:
which worker answered is read from its log line).
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
#: A host with disk of its own, that the writes put in the aggregate of
#: the sharing provider serving cn00001's disk.
LOCAL_DISK_HOST = 'cn00000'
STORAGE = bench_cloud.aggregate('storage1')
#: Idle hosts (tests/bench/cloud.py): the writes move MOVED (a NUMA node
#: and the PFs and FPGA under it) from its host to NEW_HOST.
MOVED = 'cn00005-numa0'
NEW_HOST = 'cn00006'
#: The custom class of the wide-pci tree, renamed by the writes.
CLASS = 'CUSTOM_PCI_WIDE'
RENAMED = 'CUSTOM_PCI_RENAMED'
QUERIES = [
    '/allocation_candidates?resources=VCPU:1,MEMORY_MB:512',
    '/allocation_candidates?resources=VCPU:2,MEMORY_MB:1024,DISK_GB:10'
    '&limit=3',
    '/allocation_candidates?resources=VCPU:1&required=%s' % TRAIT,
    '/allocation_candidates?resources=VCPU:1,MEMORY_MB:512'
    '&group_policy=none&resources1=SRIOV_NET_VF:1',
    '/allocation_candidates?resources=VCPU:1,DISK_GB:10&member_of=%s'
    % STORAGE,
    '/allocation_candidates?resources=VCPU:1,SRIOV_NET_VF:1&in_tree=%s'
    % bench_cloud.make_uuid(NEW_HOST),
    '/allocation_candidates?resources1=VCPU:1&resources2=FPGA:1'
    '&same_subtree=1,2&group_policy=none&limit=5',
    '/allocation_candidates?resources=%s:1' % CLASS,
    '/allocation_candidates?resources=%s:1' % RENAMED,
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
    """([(query, worker pid)] of the answers unlike a fresh process's,
    the fresh process's answers)."""
    expected = _fresh_answers(backend, url)
    return [(query, pid)
            for query, fresh in zip(QUERIES, expected)
            for pid, answers in server.answers_of_every_worker(
                query, VERSION).items()
            if any(_without_request_ids(answer) != fresh
                   for answer in answers)], expected


def _writes(port, numa_nodes):
    """(kind, status) of each kind of write, one after another."""
    numa, other = numa_nodes[0], numa_nodes[-1]
    uuid = bench_cloud.make_uuid

    def call(method, path, body=None, version=VERSION):
        return servers.request(port, method, path, body, version)

    def generation(provider):
        return call('GET', '/resource_providers/%s' % provider)[1][
            'generation']

    consumer = uuid('shared-store-consumer')
    status, candidates = call('GET', QUERIES[0] + '&limit=1')
    assert status == 200
    claim = candidates['allocation_requests'][0]
    yield 'claim', call('PUT', '/allocations/%s' % consumer, {
        **claim, 'project_id': uuid('project'), 'user_id': uuid('user'),
        'consumer_generation': None, 'consumer_type': 'INSTANCE'})[0]
    yield 'inventory', call(
        'PUT', '/resource_providers/%s/inventories/VCPU' % other, {
            'resource_provider_generation': generation(other), 'total': 512})[0]
    yield 'trait', call('PUT', '/traits/%s' % TRAIT)[0]
    yield 'traits', call('PUT', '/resource_providers/%s/traits' % numa, {
        'resource_provider_generation': generation(numa),
        'traits': [TRAIT]})[0]
    host = uuid(LOCAL_DISK_HOST)
    aggregates = call('GET', '/resource_providers/%s/aggregates' % host)[1]
    yield 'aggregates', call(
        'PUT', '/resource_providers/%s/aggregates' % host, {
            'resource_provider_generation':
                aggregates['resource_provider_generation'],
            'aggregates': aggregates['aggregates'] + [STORAGE]})[0]
    yield 're-parent', call('PUT', '/resource_providers/%s' % uuid(MOVED), {
        'name': MOVED, 'parent_provider_uuid': uuid(NEW_HOST)}, '1.37')[0]
    added = uuid('shared-store-added')
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
    yield 'rename', call('PUT', '/resource_classes/%s' % CLASS,
                         {'name': RENAMED}, '1.6')[0]


#: The writes that change no candidates: a provider without inventories
#: is in none.
CHANGING_NO_CANDIDATES = ['provider']


def _every_write(server, backend, url, numa_nodes):
    """[(kind of write, query, worker pid)] of the answers unlike a fresh
    process's after each write; the kinds of write whose fresh answers
    changed otherwise than expected: each changes some (a write that
    changed nothing would prove nothing), but CHANGING_NO_CANDIDATES,
    which change none."""
    stale, before = _stale(server, backend, url)
    stale = [('as started', *found) for found in stale]
    misjudged = []
    for kind, status in _writes(server.port, numa_nodes):
        assert status in (200, 201, 204), (kind, status)
        found, answers = _stale(server, backend, url)
        stale += [(kind, *one) for one in found]
        if (answers == before) != (kind in CHANGING_NO_CANDIDATES):
            misjudged.append(kind)
        before = answers
    return stale, misjudged


def _cloud_in(backend):
    """(A fresh database holding the bench cloud of HOSTS hosts, the uuids
    of its NUMA nodes)."""
    db = harness.fresh_database(backend)
    cloud = bench_cloud.build(HOSTS, storage_group_size=1)
    builder.write(db, cloud)
    db.dispose()
    return db, [provider.uuid for provider in cloud.providers
                if 'VCPU' in provider.inventories]


def test_preforked_workers_each_see_every_write(backend):
    """The line etc/uwsgi.ini ships: the master built the application and
    read the cloud before it forked; each worker answers as a fresh
    process after every kind of write."""
    db, numa_nodes = _cloud_in(backend)
    server = servers.Uwsgi(db.url, processes=WORKERS)
    try:
        # The application (which reads the cloud: [placement]
        # warm_caches_on_start) was built once, in the master.
        assert re.findall(r'\bready in .* pid: (\d+)\b',
                          server.log_text()) == [str(server.process.pid)]
        assert len(server.worker_pids()) == WORKERS
        assert _every_write(server, backend, db.url, numa_nodes) == ([], [])
        assert server.problems_in_log() == []
    finally:
        server.cleanup()


def test_lazy_workers_map_one_store_and_see_every_write(backend):
    db, numa_nodes = _cloud_in(backend)
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
        assert _every_write(server, backend, db.url, numa_nodes) == ([], [])
        # A write copies only the pages it patched.
        assert [own < size for size, own in (
            _mapped(pid, directory) for pid in workers)] == [True] * WORKERS
        # A worker killed: the one spawned in its place maps the files as
        # they were written, before every write since, and answers as
        # fresh (its first read brings them up to date).
        os.kill(workers[0], signal.SIGKILL)
        respawned = _respawned(server, workers)
        assert _mapped(respawned, directory)[0] > 0
        assert _stale(server, backend, db.url)[0] == []
        assert len(re.findall(r'kept cloud written',
                              server.log_text())) == 1
        assert server.problems_in_log() == []
        server.stop()
        # The last worker to exit removed the files.
        assert _store_directories(master) == []
    finally:
        server.cleanup()
