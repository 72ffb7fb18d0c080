"""Integrity of allocation writes under concurrency, against a real server.

placement_lite runs under uwsgi with several processes on one database
(PostgreSQL, and SQLite where writers are serialised). Many client threads
claim, move and release resources on the same few providers at once, asking
together for far more than the providers hold. Afterwards:

- no inventory is over-committed (usage <= capacity, read from the database);
- every claim that got a 2xx is recorded, exactly, and nothing else is
  (allocations read back through the API equal the clients' own ledger);
- no request got anything but 204 or 409 (no 500, no deadlock surfacing).

Loops are bounded in count (requests per client) and in time (timeouts on
every request and on the whole run). Only 127.0.0.1 is used.
"""

import http.client
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import uuid

import sqlalchemy as sa

from placement_lite.db import tables
from tests import harness

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), os.pardir))
UWSGI = os.path.join(os.path.dirname(sys.executable), 'uwsgi')

PROCESSES = 4
CLIENTS = 16
REQUESTS_PER_CLIENT = 25
RUN_TIMEOUT = 240.0
REQUEST_TIMEOUT = 60.0
VERSION = '1.28'
#: Provider inventories: VCPU 24 (ratio 1), MEMORY_MB (4096 - 512) * 1.5.
PROVIDERS = 3
INVENTORIES = {
    'VCPU': {'total': 24},
    'MEMORY_MB': {'total': 4096, 'reserved': 512, 'allocation_ratio': 1.5,
                  'step_size': 256, 'max_unit': 2048},
}
CAPACITY = {'VCPU': 24, 'MEMORY_MB': (4096 - 512) * 1.5}


class Server:
    """placement_lite under uwsgi, several processes, noauth2."""

    def __init__(self, db_url):
        self.workdir = tempfile.mkdtemp(prefix='placement-lite-concurrency-')
        self.port = harness._free_port()
        with open(os.path.join(self.workdir, 'placement.conf'), 'w') as conf:
            conf.write('[api]\nauth_strategy = noauth2\n'
                       '[placement_database]\nconnection = %s\n' % db_url)
        self.log = open(os.path.join(self.workdir, 'uwsgi.log'), 'w')
        self.process = subprocess.Popen(
            [UWSGI, '--http11-socket', '127.0.0.1:%d' % self.port,
             '--module', 'placement_lite.wsgi:application',
             '--processes', str(PROCESSES), '--threads', '1', '--master',
             '--lazy-apps', '--need-app', '--die-on-term',
             '--listen', '128'],
            cwd=REPO, stdout=self.log, stderr=subprocess.STDOUT,
            env=dict(os.environ, PYTHONPATH=REPO,
                     OS_PLACEMENT_CONFIG_DIR=self.workdir))
        if not harness.wait_for(self._answers, timeout=60):
            self.stop()
            raise RuntimeError('uwsgi did not start; see %s' % self.log.name)

    def _answers(self):
        try:
            return request(self.port, 'GET', '/')[0] == 200
        except OSError:
            return False

    def stop(self):
        self.process.terminate()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=30)
        self.log.close()
        shutil.rmtree(self.workdir, ignore_errors=True)


def request(port, method, path, body=None):
    """(status, json or None) for one request on a new connection."""
    connection = http.client.HTTPConnection('127.0.0.1', port,
                                            timeout=REQUEST_TIMEOUT)
    try:
        headers = {'x-auth-token': 'admin', 'accept': 'application/json',
                   'openstack-api-version': 'placement %s' % VERSION}
        data = None
        if body is not None:
            data = json.dumps(body)
            headers['content-type'] = 'application/json'
        connection.request(method, path, body=data, headers=headers)
        response = connection.getresponse()
        raw = response.read()
        return response.status, json.loads(raw) if raw else None
    finally:
        connection.close()


def create_providers(port):
    uuids = []
    for index in range(PROVIDERS):
        provider = str(uuid.uuid4())
        status, _ = request(port, 'POST', '/resource_providers',
                            {'name': 'cn%d' % index, 'uuid': provider})
        assert status in (200, 201)
        status, payload = request(
            port, 'PUT', '/resource_providers/%s/inventories' % provider,
            {'resource_provider_generation': 0, 'inventories': INVENTORIES})
        assert status == 200, payload
        uuids.append(provider)
    return uuids


class Client(threading.Thread):
    """Claims, moves and releases resources; keeps a ledger of its winners."""

    def __init__(self, port, providers, seed, deadline):
        super().__init__(daemon=True)
        self.port = port
        self.providers = providers
        self.random = random.Random(seed)
        self.deadline = deadline
        self.live = {}      # consumer uuid -> {provider: {class: amount}}
        self.statuses = []  # (operation, status, detail)
        self.claims = 0     # consumers asked for (new allocations)
        self.winners = 0    # of those, recorded with a 204

    def random_allocation(self):
        chosen = self.random.sample(self.providers, self.random.choice([1, 2]))
        allocation = {}
        for provider in chosen:
            resources = {'VCPU': self.random.randint(1, 4)}
            if self.random.random() < 0.5:
                resources['MEMORY_MB'] = 256 * self.random.randint(1, 8)
            allocation[provider] = resources
        return allocation

    @staticmethod
    def _body(allocation, generation=None):
        return {'allocations': {rp: {'resources': resources}
                                for rp, resources in allocation.items()},
                'project_id': 'project', 'user_id': 'user',
                'consumer_generation': generation}

    def note(self, operation, status, payload):
        detail = None
        if payload and 'errors' in payload:
            detail = payload['errors'][0].get('detail')
        self.statuses.append((operation, status, detail))

    def claim_one(self):
        consumer, allocation = str(uuid.uuid4()), self.random_allocation()
        status, payload = request(self.port, 'PUT', '/allocations/' + consumer,
                                  self._body(allocation))
        self.note('put', status, payload)
        self.claims += 1
        if status == 204:
            self.winners += 1
            self.live[consumer] = allocation

    def claim_two(self):
        claims = {str(uuid.uuid4()): self.random_allocation() for _ in range(2)}
        status, payload = request(self.port, 'POST', '/allocations', {
            consumer: self._body(allocation)
            for consumer, allocation in claims.items()})
        self.note('post', status, payload)
        self.claims += 2
        if status == 204:
            self.winners += 2
            self.live.update(claims)

    def move_one(self):
        """Release one live consumer and claim for a new one, atomically."""
        old = self.random.choice(sorted(self.live))
        new, allocation = str(uuid.uuid4()), self.random_allocation()
        status, payload = request(self.port, 'POST', '/allocations', {
            old: {'allocations': {}, 'project_id': 'project',
                  'user_id': 'user', 'consumer_generation': 1},
            new: self._body(allocation)})
        self.note('move', status, payload)
        self.claims += 1
        if status == 204:
            self.winners += 1
            del self.live[old]
            self.live[new] = allocation

    def release_one(self):
        consumer = self.random.choice(sorted(self.live))
        status, payload = request(self.port, 'DELETE',
                                  '/allocations/' + consumer)
        self.note('delete', status, payload)
        if status == 204:
            del self.live[consumer]

    def run(self):
        for _ in range(REQUESTS_PER_CLIENT):
            if time.monotonic() > self.deadline:
                return
            roll = self.random.random()
            try:
                if roll < 0.15 and self.live:
                    self.release_one()
                elif roll < 0.30 and self.live:
                    self.move_one()
                elif roll < 0.55:
                    self.claim_two()
                else:
                    self.claim_one()
            except OSError as exc:
                self.statuses.append(('error', None, str(exc)))


def _usage_in_database(db):
    allocations = tables.allocations
    classes = tables.resource_classes
    providers = tables.resource_providers
    query = (sa.select(providers.c.uuid, classes.c.name,
                       sa.func.sum(allocations.c.used))
             .select_from(allocations
                          .join(providers, allocations.c.resource_provider_id
                                == providers.c.id)
                          .join(classes, allocations.c.resource_class_id
                                == classes.c.id))
             .group_by(providers.c.uuid, classes.c.name))
    with db.reader() as conn:
        return {(rp, rc): int(used) for rp, rc, used in conn.execute(query)}


def _expected_usage(clients):
    usage = {}
    for client in clients:
        for allocation in client.live.values():
            for provider, resources in allocation.items():
                for resource_class, amount in resources.items():
                    key = (provider, resource_class)
                    usage[key] = usage.get(key, 0) + amount
    return usage


def test_concurrent_claims_never_overcommit(backend):
    db = harness.fresh_database(backend)
    db.dispose()
    server = Server(db.url)
    try:
        providers = create_providers(server.port)
        deadline = time.monotonic() + RUN_TIMEOUT
        clients = [Client(server.port, providers, seed, deadline)
                   for seed in range(CLIENTS)]
        started = time.monotonic()
        for client in clients:
            client.start()
        for client in clients:
            client.join(timeout=max(1.0, deadline - time.monotonic()) + 5)
        elapsed = time.monotonic() - started
        assert not any(client.is_alive() for client in clients), 'clients hung'

        statuses = [entry for client in clients for entry in client.statuses]
        unexpected = [entry for entry in statuses
                      if entry[1] not in (204, 409)
                      or (entry[0] == 'delete' and entry[1] != 204)]
        assert not unexpected, unexpected[:5]

        recorded_usage = _usage_in_database(db)
        for (provider, resource_class), used in recorded_usage.items():
            assert used <= CAPACITY[resource_class], (provider, resource_class,
                                                      used)
        assert recorded_usage == _expected_usage(clients)

        # Every live winner is recorded exactly, on every provider; nothing else.
        expected_by_provider = {provider: {} for provider in providers}
        for client in clients:
            for consumer, allocation in client.live.items():
                for provider, resources in allocation.items():
                    expected_by_provider[provider][consumer] = resources
        for provider in providers:
            status, payload = request(
                server.port, 'GET', '/resource_providers/%s/allocations'
                % provider)
            assert status == 200
            assert {consumer: entry['resources'] for consumer, entry
                    in payload['allocations'].items()} == \
                expected_by_provider[provider]

        claims = sum(client.claims for client in clients)
        winners = sum(client.winners for client in clients)
        losers = sum(1 for entry in statuses if entry[1] == 409)
        conflict_details = {entry[2].split('\n\n ')[-1].split("'")[0].strip()
                            for entry in statuses if entry[1] == 409}
        vcpu = {p[:8]: recorded_usage.get((p, 'VCPU'), 0) for p in providers}
        memory = {p[:8]: recorded_usage.get((p, 'MEMORY_MB'), 0)
                  for p in providers}
        print('\n[%s] %d processes, %d clients, %d requests in %.1fs: '
              '%d claims, %d winners, %d requests answered 409 %s; final VCPU '
              'usage %s of %d, MEMORY_MB %s of %d'
              % (backend, PROCESSES, CLIENTS, len(statuses), elapsed, claims,
                 winners, losers, sorted(conflict_details), vcpu,
                 CAPACITY['VCPU'], memory, CAPACITY['MEMORY_MB']))
        # The run must have fought over capacity: some claims lost, some won.
        assert winners > 0 and losers > 0
    finally:
        server.stop()
