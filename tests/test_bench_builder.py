"""The bulk builder (tests/bench/builder.py) leaves the database the API
leaves: a small cloud written in bulk answers every read exactly as the
same cloud loaded through the API, so the builder cannot drift from what
placement_lite writes."""

import pytest

from tests import harness
from tests.bench import builder
from tests.bench import cloud as bench_cloud
from tests.bench import queries as bench_queries

VERSION = '1.39'


@pytest.fixture
def twins(backend):
    """(loaded through the API, written in bulk) environments, one cloud:
    ten hosts in groups of two, so that it has hosts with shared storage,
    busy hosts and a full one."""
    cloud = bench_cloud.build(10, storage_group_size=2)
    loaded, written = harness.Environment(backend), harness.Environment(
        backend)
    try:
        bench_cloud.Loader(loaded, threads=1, allocation_batch=1).load(cloud)
        builder.write(written.db, cloud)
        yield cloud, loaded, written
    finally:
        loaded.close()
        written.close()


def _reads(cloud):
    """Every read of the cloud: the listing, each provider's inventories,
    traits, aggregates, usages and allocations, each consumer's
    allocations, the project's usages, and every named query."""
    paths = ['/resource_providers', '/resource_classes', '/traits',
             '/usages?project_id=%s' % cloud.landmarks['project']]
    for provider in cloud.providers:
        for member in ('', '/inventories', '/traits', '/aggregates',
                       '/usages', '/allocations'):
            paths.append('/resource_providers/%s%s' % (provider.uuid, member))
    paths += ['/allocations/%s' % consumer.uuid
              for consumer in cloud.consumers]
    return [(path, VERSION) for path in paths] + [
        (query.path, query.version)
        for query in bench_queries.named_queries(cloud)]


def test_a_cloud_written_in_bulk_answers_as_one_loaded_through_the_api(
        twins):
    cloud, loaded, written = twins
    reads = _reads(cloud)
    different = [path for path, version in reads
                 if loaded.respond('GET', path, version=version)[::2]
                 != written.respond('GET', path, version=version)[::2]]
    assert different == []
    # What is compared: generations moved by every kind of write, busy
    # and full hosts, consumers of a project.
    providers = written.request('GET', '/resource_providers',
                                version=VERSION)[2]['resource_providers']
    generations = {provider['name']: provider['generation']
                   for provider in providers}
    assert (generations['cn00000'], generations['cn00000-numa0'],
            generations['cn00009-numa0'], generations['wide-pci']) == (
                3 + 1, 1 + 1, 1 + 1, 0)
    assert generations['shared-storage001'] == 3 + sum(
        1 for consumer in cloud.consumers
        if bench_cloud.make_uuid('shared-storage001') in consumer.allocations)
    consumer = written.request('GET', '/allocations/%s'
                               % cloud.landmarks['instance'],
                               version=VERSION)[2]
    assert (consumer['consumer_generation'], consumer['consumer_type'],
            consumer['project_id']) == (1, 'INSTANCE',
                                        cloud.landmarks['project'])
    # 102 providers (ten hosts, two sharing, the wide trees), 12 instances.
    assert (len(cloud.providers), len(cloud.consumers)) == (102, 12)
