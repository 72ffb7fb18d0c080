"""Provider worlds for allocation-candidate tests, as plain data.

A world is a list of providers::

    {'name': 'cn1', 'parent': None,
     'inventories': {'VCPU': 8, 'DISK_GB': {'total': 100, 'reserved': 10}},
     'traits': ['HW_CPU_X86_AVX2'], 'aggregates': ['agg1'],
     'used': {'VCPU': 2}}

Names give stable uuids (uuid5); ``load_into_db`` writes a world straight
into a placement_lite database.
"""

import uuid

import sqlalchemy as sa

from placement_lite.db import lookups
from placement_lite.db.cloud import view
from placement_lite.db import tables
from placement_lite.engine import search

NAMESPACE = uuid.UUID('6ba7b811-9dad-11d1-80b4-00c04fd430c8')
INVENTORY_DEFAULTS = {'reserved': 0, 'min_unit': 1, 'max_unit': None,
                      'step_size': 1, 'allocation_ratio': 1.0}


def uuid_of(name):
    return str(uuid.uuid5(NAMESPACE, name))


def search_windows_of_every_tree(monkeypatch):
    """Turn off the search of only the few trees that could serve
    (Searcher.few_trees), for tests of the windows of every tree: in their
    small worlds every class and trait is held by few providers."""
    monkeypatch.setattr(search.Searcher, 'few_trees',
                        lambda self, read_holders=True: None)


def candidates(env, query, version='1.39'):
    """The body of a successful GET /allocation_candidates?``query`` on a
    tests.harness.Environment."""
    status, _headers, body = env.request(
        'GET', '/allocation_candidates?' + query, version=version)
    assert status == 200, body
    return body


def _inventory(value):
    record = dict(INVENTORY_DEFAULTS)
    record.update({'total': value} if isinstance(value, int) else value)
    if record['max_unit'] is None:
        record['max_unit'] = record['total']
    return record


def _custom_names(world):
    classes, traits = set(), set()
    for provider in world:
        classes.update(c for c in provider.get('inventories', {})
                       if c.startswith('CUSTOM_'))
        traits.update(t for t in provider.get('traits', ())
                      if t.startswith('CUSTOM_'))
    return sorted(classes), sorted(traits)


def load_into_db(db, world):
    """Write ``world`` directly with SQL; returns {name: provider id}."""
    classes, trait_names = _custom_names(world)
    ids = {}
    with db.writer() as conn:
        rc = tables.resource_classes
        next_id = max(10000, (conn.execute(sa.select(
            sa.func.max(rc.c.id))).scalar() or 0) + 1)
        for name in classes:
            if not lookups.resource_class_ids(conn, [name]):
                conn.execute(rc.insert().values(id=next_id, name=name))
                next_id += 1
        for name in trait_names:
            if not lookups.trait_ids(conn, [name]):
                conn.execute(tables.traits.insert().values(name=name))
        rp = tables.resource_providers
        for provider in world:
            parent = provider.get('parent')
            result = conn.execute(rp.insert().values(
                uuid=uuid_of(provider['name']), name=provider['name'],
                generation=0,
                parent_provider_id=ids[parent] if parent else None))
            new_id = result.inserted_primary_key[0]
            root = new_id
            if parent:
                root = conn.execute(sa.select(rp.c.root_provider_id).where(
                    rp.c.id == ids[parent])).scalar()
            conn.execute(rp.update().where(rp.c.id == new_id).values(
                root_provider_id=root))
            ids[provider['name']] = new_id
        for provider in world:
            _write_details(conn, ids[provider['name']], provider)
    return ids


def _write_details(conn, provider_id, provider):
    class_ids = lookups.resource_class_ids(
        conn, list(provider.get('inventories', {})))
    for name, value in provider.get('inventories', {}).items():
        conn.execute(tables.inventories.insert().values(
            resource_provider_id=provider_id,
            resource_class_id=class_ids[name], **_inventory(value)))
    trait_ids = lookups.trait_ids(conn, provider.get('traits', ()))
    for name in provider.get('traits', ()):
        conn.execute(tables.resource_provider_traits.insert().values(
            resource_provider_id=provider_id, trait_id=trait_ids[name]))
    aggregates = tables.placement_aggregates
    for name in provider.get('aggregates', ()):
        agg_uuid = uuid_of(name)
        agg_id = conn.execute(sa.select(aggregates.c.id).where(
            aggregates.c.uuid == agg_uuid)).scalar()
        if agg_id is None:
            agg_id = conn.execute(aggregates.insert().values(
                uuid=agg_uuid)).inserted_primary_key[0]
        conn.execute(tables.resource_provider_aggregates.insert().values(
            resource_provider_id=provider_id, aggregate_id=agg_id))
    used = provider.get('used', {})
    used_ids = lookups.resource_class_ids(conn, list(used))
    for name, amount in used.items():
        conn.execute(tables.allocations.insert().values(
            resource_provider_id=provider_id,
            consumer_id=uuid_of('consumer-' + provider['name']),
            resource_class_id=used_ids[name], used=amount))


def record_windows(monkeypatch):
    """The window (cloud.Window, or None) of each capacities read, in
    order."""
    windows = []
    real = view.View.capacities

    def recording(self, rc_ids, root_id=None, window=None, also_ids=()):
        windows.append(window)
        return real(self, rc_ids, root_id, window, also_ids)

    monkeypatch.setattr(view.View, 'capacities', recording)
    return windows
