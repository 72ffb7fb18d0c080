"""A rolling takeover (issue 40): the reference and placement_lite serve
one database at once (tests/bench/mixed_fleet.py: the reference under
uwsgi with 2 processes, placement_lite under the shipped etc/uwsgi.ini
with 4).

- Claims through both services at one instant on the two providers of a
  host, the child listed first: no answer >= 500 on either side, no
  deadlock the reference alone would not have (on PostgreSQL none, on
  MariaDB none with placement_lite in it), every host filled, the
  database holding exactly the claims acknowledged and both services'
  usages equal to them, and no inventory over capacity but by what the
  reference's own retried claims can have done (api-ref/divergences.md,
  "Retries run in fresh transactions": the reference over-commits alone
  too).
- Going back: placement_lite stopped, the reference alone answers for
  every row as placement_lite did, and writes (test_adopt_reference_database
  covers the reference started again on a database placement_lite synced).
- After each kind of write through either service, every placement_lite
  worker answers allocation candidates, provider summaries included, as
  the reference does.

PostgreSQL and MariaDB: SQLite is not shared by two services.
"""

import pytest

from tests import test_adopt_reference_database as adopt
from tests.bench import cloud as bench_cloud
from tests.bench import mixed_fleet
from tests.bench import services

pytestmark = [pytest.mark.slow, pytest.mark.mysql,
              pytest.mark.only_backends('postgresql', 'mysql')]

#: Bursts of claims. On PostgreSQL before issue 40's fix about one burst
#: in three deadlocked: 16 leave the defect unseen once in 600 runs. A
#: burst takes about 0.3 s without deadlocks.
BURSTS = 16
VERSION = '1.39'


def _venv():
    return services.reference_venv(log=lambda _message: None)


def _reference_writes(reference, records):
    """Going back: the reference alone claims on host2 (adopt's cloud) and
    releases the first claim of the bursts; (the statuses, the two
    consumers' allocations it then reads)."""
    consumer = bench_cloud.make_uuid('mixed-fleet-rollback')
    released = next(iter(records[0]['claimed']))
    statuses = [
        reference.request('PUT', '/allocations/%s' % consumer, {
            'allocations': {adopt.HOST2: {'resources': {'VCPU': 1}}},
            'project_id': adopt.PROJECT, 'user_id': adopt.USER,
            'consumer_generation': None, 'consumer_type': 'INSTANCE'},
            version=VERSION)[0],
        reference.request('DELETE', '/allocations/%s' % released,
                          version=VERSION)[0]]
    read = [reference.request('GET', '/allocations/%s' % uuid,
                              version=VERSION)[2]['allocations']
            for uuid in (consumer, released)]
    return statuses, [{provider: held['resources']
                       for provider, held in allocations.items()}
                      for allocations in read]


def test_claims_through_both_services_at_once(backend):
    """Bursts of claims through both services on adopt's cloud (written by
    placement_lite while the reference serves), then placement_lite
    stopped: the reference answers for every row as placement_lite did."""
    fleet = mixed_fleet.Fleet(backend, _venv())
    try:
        fleet.start()
        lite = fleet.clients['placement_lite']
        reference = fleet.clients['reference']
        adopt.build(lite.request)
        records = mixed_fleet.bursts(fleet, mixed_fleet.SCENARIOS['mixed'],
                                     BURSTS)
        checked = mixed_fleet.check(fleet, records)

        paths = adopt.READS + mixed_fleet.every_row_paths(fleet.db)
        served = adopt.answers(lite.request, paths)
        fleet.stop(['placement_lite'])
        served_after = adopt.answers(reference.request, paths)
        written = _reference_writes(reference, records)
        fleet.stop()
        deadlocks = fleet.deadlocks()
        with_lite = fleet.lite_deadlocks()
    finally:
        fleet.close()

    refused = {side: [status for record in records
                      for status in record['statuses'][side]
                      if status not in (204, 409)]
               for side in mixed_fleet.SIDES}
    assert refused == {'reference': [], 'placement_lite': []}, [
        error for record in records for error in record['errors']]
    if backend == 'mysql':
        # The reference deadlocks alone on MariaDB (mixed_fleet's
        # docstring): what the mix must not add are deadlocks with
        # placement_lite in them.
        assert with_lite == [], deadlocks
    else:
        # The reference alone cannot deadlock here: its claims lock both
        # providers in the order of the body, and PostgreSQL takes no gap
        # locks.
        assert deadlocks == 0
    # No claim refused while its host had room.
    assert [len(record['claimed']) >= mixed_fleet.FITS
            for record in records] == [True] * BURSTS
    assert checked['exact']
    assert checked['usages_differ'] == []
    assert mixed_fleet.unexplained_overages(checked) == []
    assert served_after == served
    assert written == ([204, 204], [{adopt.HOST2: {'VCPU': 1}}, {}])


class Cloud:
    """One writer's small cloud: host A (MEMORY_MB) with two NUMA nodes
    (VCPU), host B (VCPU, MEMORY_MB and a custom class), host C (VCPU,
    MEMORY_MB); a custom trait and an aggregate, used by the writes."""

    def __init__(self, writer):
        tag = writer.upper()
        self.trait = 'CUSTOM_%s_FAST' % tag
        self.resource_class = 'CUSTOM_%s_X' % tag
        self.renamed = 'CUSTOM_%s_Y' % tag
        self.class_names = [self.resource_class]
        self.uuid = {name: bench_cloud.make_uuid('%s-%s' % (writer, name))
                     for name in ('a', 'a0', 'a1', 'b', 'c', 'aggregate',
                                  'consumer')}

    def build(self):
        """The requests making the cloud: (method, path, body, version)."""
        uuid = self.uuid
        requests = [('PUT', '/resource_classes/%s' % self.resource_class,
                     None, VERSION),
                    ('PUT', '/traits/%s' % self.trait, None, VERSION)]
        for name, parent, inventory in (
                ('a', None, {'MEMORY_MB': 4096}),
                ('a0', 'a', {'VCPU': 8}), ('a1', 'a', {'VCPU': 4}),
                ('b', None, {'VCPU': 4, 'MEMORY_MB': 2048,
                             self.resource_class: 2}),
                ('c', None, {'VCPU': 2, 'MEMORY_MB': 1024})):
            requests += [
                ('POST', '/resource_providers', {
                    'name': uuid[name], 'uuid': uuid[name],
                    'parent_provider_uuid': parent and uuid[parent]},
                 VERSION),
                ('PUT', '/resource_providers/%s/inventories' % uuid[name], {
                    'resource_provider_generation': 0, 'inventories': {
                        rc: {'total': total}
                        for rc, total in inventory.items()}}, VERSION)]
        return requests

    def writes(self, client):
        """(kind of write, its request) of each write, one after another:
        a write reads the generation the one before left."""
        uuid = self.uuid

        def generation(name):
            return client.request('GET', '/resource_providers/%s'
                                  % uuid[name], version=VERSION)[2][
                'generation']

        yield 'inventory', ('PUT', '/resource_providers/%s/inventories'
                            % uuid['a0'], {
                                'resource_provider_generation':
                                    generation('a0'),
                                'inventories': {'VCPU': {'total': 6}}},
                            VERSION)
        yield 'trait', ('PUT', '/resource_providers/%s/traits' % uuid['b'], {
            'resource_provider_generation': generation('b'),
            'traits': [self.trait]}, VERSION)
        yield 'aggregate', ('PUT', '/resource_providers/%s/aggregates'
                            % uuid['a'], {
                                'resource_provider_generation':
                                    generation('a'),
                                'aggregates': [uuid['aggregate']]}, VERSION)
        yield 'allocation', ('PUT', '/allocations/%s' % uuid['consumer'], {
            'allocations': {uuid['a0']: {'resources': {'VCPU': 2}},
                            uuid['a']: {'resources': {'MEMORY_MB': 512}}},
            'project_id': adopt.PROJECT, 'user_id': adopt.USER,
            'consumer_generation': None, 'consumer_type': 'INSTANCE'},
            VERSION)
        yield 're-parent', ('PUT', '/resource_providers/%s' % uuid['a1'], {
            'name': uuid['a1'], 'parent_provider_uuid': uuid['b']}, '1.37')
        yield 'delete', ('DELETE', '/resource_providers/%s' % uuid['c'],
                         None, VERSION)
        self.class_names.append(self.renamed)
        yield 'rename', ('PUT', '/resource_classes/%s' % self.resource_class,
                         {'name': self.renamed}, '1.6')

    def queries(self):
        """Candidates requests reaching this cloud alone: each tree, the
        trait, the aggregate, the custom class by each name it has had."""
        trees = ['resources=VCPU:1,MEMORY_MB:256&in_tree=%s' % self.uuid[root]
                 for root in ('a', 'b', 'c')]
        return ['/allocation_candidates?' + query for query in (
            *trees, 'resources=VCPU:1&required=%s' % self.trait,
            'resources=MEMORY_MB:256&member_of=%s' % self.uuid['aggregate'],
            *('resources=%s:1' % name for name in self.class_names))]


def _stale_workers(fleet, cloud):
    """[(query, how many placement_lite workers answer it otherwise than
    the reference does)] of ``cloud``'s queries, where any does."""
    stale = []
    for query in cloud.queries():
        status, _headers, body = fleet.clients['reference'].request(
            'GET', query, version=VERSION)
        expected = (status, adopt.normalised(body))
        count = sum(any((status, adopt.normalised(body)) != expected
                        for status, body in answers)
                    for answers in fleet.lite_answers(query).values())
        if count:
            stale.append((query, count))
    return stale


def test_every_placement_lite_worker_answers_as_the_reference(backend):
    """After each kind of write, made through the reference and then
    through placement_lite (each on a cloud of its own)."""
    fleet = mixed_fleet.Fleet(backend, _venv())
    refused, stale = [], []
    try:
        fleet.start()
        workers = len(fleet.lite_workers())
        for writer in mixed_fleet.SIDES:
            client = fleet.clients[writer]
            cloud = Cloud(writer)
            for method, path, body, version in cloud.build():
                status = client.request(method, path, body, version)[0]
                if status not in (200, 201, 204):
                    refused.append((writer, 'build', path, status))
            stale += [(writer, 'built', *found)
                      for found in _stale_workers(fleet, cloud)]
            for kind, (method, path, body, version) in cloud.writes(client):
                status = client.request(method, path, body, version)[0]
                if status not in (200, 201, 204):
                    refused.append((writer, kind, path, status))
                stale += [(writer, kind, *found)
                          for found in _stale_workers(fleet, cloud)]
    finally:
        fleet.close()

    assert workers == mixed_fleet.LITE_PROCESSES
    assert refused == []
    assert stale == [], '\n'.join(map(str, stale))
