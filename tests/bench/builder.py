"""The benchmark cloud written straight into placement_lite's tables.

Loading 50,000 hosts (about 370,000 providers) through the API would take
hours; :func:`write` puts the rows the API would have left there in a few
statements per table (``placement_lite.db.bulk.insert``: on PostgreSQL each
column one array parameter), in one transaction, on a database freshly
migrated by placement_lite. What it writes is what
:class:`tests.bench.cloud.Loader` leaves when each instance is claimed by a
request of its own, as nova claims them (``allocation_batch=1``), one
provider after another, tree level by tree level (``threads=1``):

- a provider's generation counts the writes that bumped it: its
  inventories, its traits and its aggregates (each written once, when it
  has some) and one claim per instance allocating from it;
- a consumer is at generation 1 (created at 0, bumped by its claim), of
  type INSTANCE, owned by its project and user;
- the custom resource classes and traits exist; a custom class gets the
  next custom id, as ``PUT /resource_classes/{name}`` gives it.

``tests/test_bench_builder.py`` checks that a cloud written here answers
exactly as the same cloud loaded through the API.
"""

import collections
import time

import sqlalchemy as sa

from placement_lite.db import api as db_api
from placement_lite.db import bulk
from placement_lite.db import lookups
from placement_lite.db import resource_classes
from placement_lite.db import tables
from placement_lite.domain import standard_names
from tests import harness
from tests.bench import cloud as bench_cloud

#: Rows per statement: a statement's arrays stay a few megabytes.
CHUNK = 50000
CONSUMER_TYPE = 'INSTANCE'


def write(db, cloud, progress=None):
    """Write ``cloud`` into ``db`` (a placement_lite Database, migrated,
    holding no provider); returns the seconds it took."""
    progress = progress or (lambda message: None)
    started = time.monotonic()
    now = lookups.utcnow()
    # Ids in the order the loader creates the providers.
    providers = [provider for level in cloud.levels() for provider in level]
    with db.writer() as conn:
        class_ids = _resource_classes(conn, now)
        trait_ids = _traits(conn, now)
        provider_ids = _providers(conn, cloud, providers, now)
        progress('%d providers written after %.0f s'
                 % (len(provider_ids), time.monotonic() - started))
        _insert(conn, tables.inventories, [
            {'resource_provider_id': provider_ids[provider.uuid],
             'resource_class_id': class_ids[name], **values}
            for provider in providers
            for name, values in provider.inventories.items()], created_at=now)
        _insert(conn, tables.resource_provider_traits, [
            {'resource_provider_id': provider_ids[provider.uuid],
             'trait_id': trait_ids[name]}
            for provider in providers for name in provider.traits],
            created_at=now)
        _aggregates(conn, providers, provider_ids, now)
        progress('inventories, traits and aggregates written after %.0f s'
                 % (time.monotonic() - started))
        _consumers(conn, cloud, provider_ids, class_ids, now)
        progress('%d consumers written after %.0f s'
                 % (len(cloud.consumers), time.monotonic() - started))
    return time.monotonic() - started


def new_database(name, cloud, progress=None):
    """A new database ``name`` on the throwaway PostgreSQL holding
    ``cloud``, vacuumed and analyzed; (its URL, seconds the rows took)."""
    url = harness.create_postgres_database(name, migrated=True)
    db = db_api.Database(url)
    try:
        seconds = write(db, cloud, progress)
    finally:
        db.dispose()
    harness.postgres_server().vacuum(name)
    return url, seconds


def _insert(conn, table, rows, **same):
    for start in range(0, len(rows), CHUNK):
        bulk.insert(conn, table, rows[start:start + CHUNK], **same)


def _resource_classes(conn, now):
    """{name: id} of every class, the custom ones created."""
    rc = tables.resource_classes
    for name in bench_cloud.CUSTOM_RESOURCE_CLASSES:
        class_id = resource_classes.next_custom_id(
            conn, standard_names.FIRST_CUSTOM_RESOURCE_CLASS_ID)
        conn.execute(rc.insert().values(id=class_id, name=name,
                                        created_at=now))
    return dict(conn.execute(sa.select(rc.c.name, rc.c.id)).all())


def _traits(conn, now):
    """{name: id} of every trait, the custom ones created."""
    _insert(conn, tables.traits, [{'name': name} for name
                                  in bench_cloud.CUSTOM_TRAITS],
            created_at=now)
    return dict(conn.execute(sa.select(tables.traits.c.name,
                                       tables.traits.c.id)).all())


def _generations(cloud):
    """{provider uuid: generation}: one bump per kind of data written and
    per instance claiming from the provider."""
    claims = collections.Counter(
        uuid for consumer in cloud.consumers for uuid in consumer.allocations)
    return {provider.uuid: (bool(provider.inventories) + bool(provider.traits)
                            + bool(provider.aggregates)
                            + claims[provider.uuid])
            for provider in cloud.providers}


def _providers(conn, cloud, providers, now):
    """Insert ``providers`` (parents before children) with the ids they
    are given here, in their order; {uuid: id}."""
    rp = tables.resource_providers
    first = (conn.execute(sa.select(sa.func.max(rp.c.id))).scalar() or 0) + 1
    ids = {provider.uuid: first + index
           for index, provider in enumerate(providers)}
    generations = _generations(cloud)
    roots = {}
    rows = []
    for provider in providers:
        uuid = provider.uuid
        parent = provider.parent and provider.parent.uuid
        roots[uuid] = roots[parent] if parent else ids[uuid]
        rows.append({
            'id': ids[uuid], 'uuid': uuid, 'name': provider.name,
            'generation': generations[uuid], 'root_provider_id': roots[uuid],
            'parent_provider_id': ids[parent] if parent else None,
            # A root is updated when created (its root set); any provider
            # by each write bumping its generation.
            'updated_at': now if generations[uuid] or not parent else None})
    _insert(conn, rp, rows, created_at=now)
    if conn.dialect.name == 'postgresql':
        conn.execute(sa.text(
            "SELECT setval(pg_get_serial_sequence('resource_providers', "
            "'id'), :last)"), {'last': first + len(rows) - 1})
    return ids


def _aggregates(conn, providers, provider_ids, now):
    """The aggregates, created as the API creates them (provider by
    provider, those new to each in the order of their uuids), and each
    provider's membership."""
    uuids = {}
    for provider in providers:
        new = set(provider.aggregates) - set(uuids)
        uuids.update(dict.fromkeys(sorted(new)))
    table = tables.placement_aggregates
    _insert(conn, table, [{'uuid': uuid} for uuid in uuids], created_at=now)
    ids = dict(conn.execute(sa.select(table.c.uuid, table.c.id)).all())
    _insert(conn, tables.resource_provider_aggregates, [
        {'resource_provider_id': provider_ids[provider.uuid],
         'aggregate_id': ids[uuid]}
        for provider in providers for uuid in provider.aggregates],
        created_at=now)


def _owner_ids(conn, table, external_ids, now):
    """{external id: id} of ``table`` (projects, users), created."""
    _insert(conn, table, [{'external_id': external} for external
                          in sorted(set(external_ids))], created_at=now)
    return dict(conn.execute(sa.select(table.c.external_id,
                                       table.c.id)).all())


def _consumers(conn, cloud, provider_ids, class_ids, now):
    projects = _owner_ids(conn, tables.projects, [
        consumer.project_id for consumer in cloud.consumers], now)
    users = _owner_ids(conn, tables.users,
                       [consumer.user_id for consumer in cloud.consumers], now)
    types = tables.consumer_types
    type_id = conn.execute(sa.select(types.c.id).where(
        types.c.name == CONSUMER_TYPE)).scalar()
    if type_id is None:
        type_id = conn.execute(types.insert().values(
            name=CONSUMER_TYPE, created_at=now)).inserted_primary_key[0]
    _insert(conn, tables.consumers, [
        {'uuid': consumer.uuid, 'project_id': projects[consumer.project_id],
         'user_id': users[consumer.user_id]}
        for consumer in cloud.consumers],
        generation=1, consumer_type_id=type_id, created_at=now,
        updated_at=now)
    _insert(conn, tables.allocations, [
        {'resource_provider_id': provider_ids[uuid],
         'consumer_id': consumer.uuid, 'resource_class_id': class_ids[name],
         'used': used}
        for consumer in cloud.consumers
        for uuid, resources in consumer.allocations.items()
        for name, used in resources.items()], created_at=now)
