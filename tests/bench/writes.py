"""The writes the benchmark times: what nova's report client and resource
tracker send, one round of each per service in turns.

A round claims resources for a new instance on a host running others,
resizes it, moves its allocations to a migration consumer, deletes
those, changes a PF's inventory, sets a host's traits and aggregates
again, and creates and deletes a child provider. The generations each
write needs are read first with an untimed GET, as the clients do. A
round changes nothing else but the PF's reserved VFs, which it sets to the
parity of its number.
"""

import json
import uuid as uuidlib

from tests.bench import cloud as bench_cloud

VERSION = '1.39'

#: (name, what it does), in the order a round runs them.
STEPS = (
    ('claim', 'PUT /allocations/{consumer}: a new instance'),
    ('resize', 'PUT /allocations/{consumer}: the same, larger'),
    ('move', 'POST /allocations: to a migration consumer'),
    ('delete_allocations', 'DELETE /allocations/{consumer}'),
    ('inventories', "PUT a provider's inventories"),
    ('traits', "PUT a host's traits (the same)"),
    ('aggregates', "PUT a host's aggregates (the same)"),
    ('create_provider', 'POST /resource_providers: a child'),
    ('delete_provider', 'DELETE /resource_providers/{uuid}'),
)


class WriteFailed(Exception):
    """A write was answered with an unexpected status."""

    def __init__(self, step, status, body):
        super().__init__('%s: %s %s' % (step, status, body[:300]))
        self.step = step
        self.status = status
        self.body = body


class Round:
    """One round of writes against one service (``client``: an
    HttpClient), on the landmarks of ``cloud``."""

    def __init__(self, client, cloud, number):
        self.client = client
        self.marks = cloud.landmarks
        self.number = number
        #: {step name: seconds}
        self.seconds = {}

    def run(self):
        marks = self.marks
        instance, migration = str(uuidlib.uuid4()), str(uuidlib.uuid4())
        host = '/resource_providers/%s' % marks['busy_host']
        pf = '/resource_providers/%s' % marks['busy_pf']
        self._write('claim', 'PUT', '/allocations/%s' % instance,
                    self._consumer(2, None))
        generation = self._read('/allocations/%s' % instance)[
            'consumer_generation']
        self._write('resize', 'PUT', '/allocations/%s' % instance,
                    self._consumer(4, generation))
        generation = self._read('/allocations/%s' % instance)[
            'consumer_generation']
        self._write('move', 'POST', '/allocations', {
            instance: dict(self._consumer(4, generation),
                           allocations={}),
            migration: dict(self._consumer(4, None),
                            consumer_type='MIGRATION')})
        self._write('delete_allocations', 'DELETE',
                    '/allocations/%s' % migration)
        self._write('inventories', 'PUT', pf + '/inventories', {
            'resource_provider_generation': self._generation(
                pf + '/inventories'),
            'inventories': {'SRIOV_NET_VF': bench_cloud.inventory(
                bench_cloud.VFS_PER_PF, reserved=self.number % 2)}})
        for step in ('traits', 'aggregates'):
            shown = self._read('%s/%s' % (host, step))
            self._write(step, 'PUT', '%s/%s' % (host, step), {
                'resource_provider_generation':
                    shown['resource_provider_generation'],
                step: shown[step]})
        child = self._write('create_provider', 'POST', '/resource_providers', {
            'name': 'bench-child-%s' % uuidlib.uuid4(),
            'parent_provider_uuid': marks['busy_host']})
        self._write('delete_provider', 'DELETE',
                    '/resource_providers/%s' % child['uuid'])
        return self.seconds

    def _consumer(self, vcpus, generation):
        return {
            'allocations': {
                self.marks['busy_numa']: {
                    'resources': {'VCPU': vcpus, 'MEMORY_MB': 2048}},
                self.marks['busy_disk']: {'resources': {'DISK_GB': 20}}},
            'project_id': self.marks['project'],
            'user_id': self.marks['user'],
            'consumer_generation': generation,
            'consumer_type': 'INSTANCE'}

    def _generation(self, path):
        return self._read(path)['resource_provider_generation']

    def _read(self, path):
        status, raw, _seconds = self.client.fetch('GET', path,
                                                  version=VERSION)
        if status != 200:
            raise WriteFailed('GET ' + path, status, raw.decode())
        return json.loads(raw)

    def _write(self, step, method, path, body=None):
        status, raw, seconds = self.client.fetch(method, path, body,
                                                 version=VERSION)
        if status not in (200, 204):
            raise WriteFailed(step, status, raw.decode(errors='replace'))
        self.seconds[step] = seconds
        return json.loads(raw) if raw else None
