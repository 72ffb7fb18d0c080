"""Writes of another service, made straight into the database as the
reference (openstack-placement 16.0.0) makes them: a placement_lite
process that kept the cloud between requests answers candidates, their
provider summaries included, as a process starting afresh does after
each.

The writes are those a process must see without any word of its own
code (docs/architecture.md, "Which writes a cache must see"):
inventories added, changed and removed and traits set, each with the
provider's generation bumped in the same transaction; aggregates joined
as from 1.19 (generation bumped) and left as before it (not bumped), a
sharing provider's included; a subtree re-parented and a provider made a
root (the reference moves parent and root, not the generation); a
provider created and one deleted; allocations; a resource class renamed.
Each write changes some answer (so that a write missed shows), on
SQLite, PostgreSQL and MariaDB, the cloud read whole or in windows.
tests/test_mixed_fleet.py has the reference itself write through its
API, on PostgreSQL and MariaDB.
"""

import datetime

import pytest
import sqlalchemy as sa

from placement_lite.db import tables
from placement_lite.engine import windows as windows_of
from tests import candidate_worlds as worlds
from tests import harness

pytestmark = pytest.mark.mysql

U = worlds.uuid_of
rp = tables.resource_providers
VERSION = '1.39'
MAGIC = 'CUSTOM_MAGIC'
RENAMED = 'CUSTOM_MAGIC_RENAMED'

WORLD = [
    {'name': 'ss', 'inventories': {'DISK_GB': 500},
     'traits': ['MISC_SHARES_VIA_AGGREGATE'], 'aggregates': ['agg1']},
    {'name': 'cn1', 'inventories': {'DISK_GB': 100},
     'aggregates': ['agg1']},
    {'name': 'cn1numa0', 'parent': 'cn1',
     'inventories': {'VCPU': 4, 'MEMORY_MB': 4096}},
    {'name': 'cn1numa1', 'parent': 'cn1',
     'inventories': {'VCPU': 4, 'MEMORY_MB': 4096},
     'traits': ['HW_CPU_X86_AVX2']},
    {'name': 'cn1pf', 'parent': 'cn1numa1',
     'inventories': {'SRIOV_NET_VF': 4}},
    {'name': 'cn2', 'inventories': {'DISK_GB': 100, MAGIC: 3},
     'aggregates': ['agg2']},
    {'name': 'cn2numa0', 'parent': 'cn2',
     'inventories': {'VCPU': 2, 'MEMORY_MB': 2048}},
    {'name': 'cn2numa1', 'parent': 'cn2',
     'inventories': {'VCPU': 2, 'MEMORY_MB': 2048}},
    {'name': 'cn3', 'inventories': {'DISK_GB': 50}},
    {'name': 'cn3numa0', 'parent': 'cn3',
     'inventories': {'VCPU': 8, 'MEMORY_MB': 8192}},
    {'name': 'cn3numa1', 'parent': 'cn3',
     'inventories': {'VCPU': 8, 'MEMORY_MB': 8192},
     'traits': ['HW_CPU_X86_AVX2']},
]

QUERIES = [query + limit for query in (
    'resources=VCPU:1,MEMORY_MB:512',
    'resources=VCPU:1,DISK_GB:10',
    'resources=VCPU:1&required=HW_CPU_X86_AVX2',
    'resources=VCPU:1&required=!HW_CPU_X86_AVX2',
    'resources=VCPU:1,DISK_GB:10&member_of=%s' % U('agg1'),
    'resources=DISK_GB:10&member_of=%s' % U('agg2'),
    'resources=VCPU:1&in_tree=%s' % U('cn2'),
    'resources=SRIOV_NET_VF:1',
    'resources1=VCPU:1&resources2=SRIOV_NET_VF:1&same_subtree=1,2'
    '&group_policy=none',
) for limit in ('', '&limit=2')]


class AnotherService:
    """Writes of WORLD's rows, each in a transaction of its own, as the
    reference writes them."""

    def __init__(self, db):
        self.db = db
        self.ids = worlds.load_into_db(db, WORLD)
        with db.writer() as conn:
            # The reference gives every provider its creation time.
            conn.execute(rp.update().values(
                created_at=datetime.datetime(2026, 1, 1)))

    def _class_id(self, conn, name):
        return conn.execute(sa.select(tables.resource_classes.c.id).where(
            tables.resource_classes.c.name == name)).scalar_one()

    def _trait_id(self, conn, name):
        return conn.execute(sa.select(tables.traits.c.id).where(
            tables.traits.c.name == name)).scalar_one()

    @staticmethod
    def _bump(conn, provider_id):
        conn.execute(rp.update().where(rp.c.id == provider_id).values(
            generation=rp.c.generation + 1))

    def _add_inventory(self, conn, provider_id, rc, total):
        conn.execute(tables.inventories.insert().values(
            resource_provider_id=provider_id,
            resource_class_id=self._class_id(conn, rc), total=total,
            reserved=0, min_unit=1, max_unit=total, step_size=1,
            allocation_ratio=1.0))

    def add_inventory(self, name, rc, total):
        with self.db.writer() as conn:
            self._add_inventory(conn, self.ids[name], rc, total)
            self._bump(conn, self.ids[name])

    def change_inventory(self, name, rc, total):
        inventories = tables.inventories
        with self.db.writer() as conn:
            conn.execute(inventories.update().where(
                inventories.c.resource_provider_id == self.ids[name],
                inventories.c.resource_class_id == self._class_id(conn, rc)
            ).values(total=total, max_unit=total))
            self._bump(conn, self.ids[name])

    def _unlink(self, name, table, column, id_of, value):
        """The row of ``table`` giving ``name`` ``value`` (its id in
        ``column``: ``id_of(conn, value)``) deleted; the generation
        bumped."""
        with self.db.writer() as conn:
            conn.execute(table.delete().where(
                table.c.resource_provider_id == self.ids[name],
                table.c[column] == id_of(conn, value)))
            self._bump(conn, self.ids[name])

    def remove_inventory(self, name, rc):
        self._unlink(name, tables.inventories, 'resource_class_id',
                     self._class_id, rc)

    def add_trait(self, name, trait):
        with self.db.writer() as conn:
            conn.execute(tables.resource_provider_traits.insert().values(
                resource_provider_id=self.ids[name],
                trait_id=self._trait_id(conn, trait)))
            self._bump(conn, self.ids[name])

    def remove_trait(self, name, trait):
        self._unlink(name, tables.resource_provider_traits, 'trait_id',
                     self._trait_id, trait)

    def join(self, name, aggregate, bump=True):
        """``name`` put in ``aggregate``, created if new; the generation
        bumped as from 1.19, or left as before."""
        aggregates = tables.placement_aggregates
        with self.db.writer() as conn:
            agg_id = conn.execute(sa.select(aggregates.c.id).where(
                aggregates.c.uuid == U(aggregate))).scalar()
            if agg_id is None:
                agg_id = conn.execute(aggregates.insert().values(
                    uuid=U(aggregate))).inserted_primary_key[0]
            conn.execute(tables.resource_provider_aggregates.insert().values(
                resource_provider_id=self.ids[name], aggregate_id=agg_id))
            if bump:
                self._bump(conn, self.ids[name])

    def leave(self, name, aggregate, bump=True):
        members = tables.resource_provider_aggregates
        aggregates = tables.placement_aggregates
        with self.db.writer() as conn:
            conn.execute(members.delete().where(
                members.c.resource_provider_id == self.ids[name],
                members.c.aggregate_id == sa.select(aggregates.c.id).where(
                    aggregates.c.uuid == U(aggregate)).scalar_subquery()))
            if bump:
                self._bump(conn, self.ids[name])

    def reparent(self, name, parent, subtree=()):
        """``name`` put under ``parent`` (None: made a root); it and the
        providers of its ``subtree`` given the new root."""
        with self.db.writer() as conn:
            if parent is None:
                root, parent_id = self.ids[name], None
            else:
                parent_id = self.ids[parent]
                root = conn.execute(sa.select(rp.c.root_provider_id).where(
                    rp.c.id == parent_id)).scalar_one()
            conn.execute(rp.update().where(rp.c.id == self.ids[name]).values(
                parent_provider_id=parent_id, root_provider_id=root))
            for below in subtree:
                conn.execute(rp.update().where(
                    rp.c.id == self.ids[below]).values(
                    root_provider_id=root))

    def create(self, name, inventories):
        with self.db.writer() as conn:
            new = conn.execute(rp.insert().values(
                uuid=U(name), name=name, generation=0,
                created_at=datetime.datetime(2026, 1, 2))
            ).inserted_primary_key[0]
            conn.execute(rp.update().where(rp.c.id == new).values(
                root_provider_id=new))
            for rc, total in inventories.items():
                self._add_inventory(conn, new, rc, total)
            self._bump(conn, new)
        self.ids[name] = new

    def delete(self, name):
        provider = self.ids.pop(name)
        with self.db.writer() as conn:
            for table in (tables.inventories, tables.resource_provider_traits,
                          tables.resource_provider_aggregates):
                conn.execute(table.delete().where(
                    table.c.resource_provider_id == provider))
            # A root refers to itself: MariaDB checks that on delete.
            conn.execute(rp.update().where(rp.c.id == provider).values(
                root_provider_id=None))
            conn.execute(rp.delete().where(rp.c.id == provider))

    def allocate(self, consumer, name, resources):
        """A consumer of a new project and user allocated ``resources``
        of ``name``; the generation bumped."""
        with self.db.writer() as conn:
            project = conn.execute(tables.projects.insert().values(
                external_id=U('project'))).inserted_primary_key[0]
            user = conn.execute(tables.users.insert().values(
                external_id=U('user'))).inserted_primary_key[0]
            conn.execute(tables.consumers.insert().values(
                uuid=U(consumer), project_id=project, user_id=user,
                generation=0))
            for rc, used in resources.items():
                conn.execute(tables.allocations.insert().values(
                    resource_provider_id=self.ids[name],
                    consumer_id=U(consumer),
                    resource_class_id=self._class_id(conn, rc), used=used))
            self._bump(conn, self.ids[name])

    def rename_class(self, name, new_name):
        classes = tables.resource_classes
        with self.db.writer() as conn:
            conn.execute(classes.update().where(classes.c.name == name)
                         .values(name=new_name))


def _writes(service):
    """(what, the write) of every kind, one after another."""
    return [
        ('inventory added', lambda: service.add_inventory(
            'cn2numa0', 'SRIOV_NET_VF', 2)),
        ('inventory changed', lambda: service.change_inventory(
            'cn1numa0', 'VCPU', 16)),
        ('inventory removed', lambda: service.remove_inventory(
            'cn3', 'DISK_GB')),
        ('trait added', lambda: service.add_trait(
            'cn2numa1', 'HW_CPU_X86_AVX2')),
        ('trait removed', lambda: service.remove_trait(
            'cn1numa1', 'HW_CPU_X86_AVX2')),
        ('aggregate joined', lambda: service.join('cn3', 'agg1')),
        ('aggregate left, generation unchanged', lambda: service.leave(
            'cn1', 'agg1', bump=False)),
        ('sharing provider joined a second aggregate',
         lambda: service.join('ss', 'agg2', bump=False)),
        ('subtree re-parented', lambda: service.reparent(
            'cn1numa1', 'cn2', subtree=['cn1pf'])),
        ('provider made a root', lambda: service.reparent(
            'cn2numa0', None)),
        ('provider created', lambda: service.create(
            'cn4', {'VCPU': 32, 'MEMORY_MB': 32768, 'DISK_GB': 10})),
        ('provider deleted', lambda: service.delete('cn3numa1')),
        ('allocations', lambda: service.allocate(
            'consumer', 'cn2numa1', {'VCPU': 2})),
        ('resource class renamed', lambda: service.rename_class(
            MAGIC, RENAMED)),
    ]


def _answers(env):
    """Every query's (status, body), the request ids left out."""
    found = []
    for query in QUERIES:
        status, _headers, body = env.request(
            'GET', '/allocation_candidates?' + query, version=VERSION)
        for error in body.get('errors', ()):
            error.pop('request_id', None)
        found.append((query, status, body))
    return found


@pytest.mark.parametrize('windows', ['whole cloud', 'few trees',
                                     'every tree'])
def test_a_kept_cloud_answers_as_a_fresh_process_after_each_write(
        environment, backend, monkeypatch, windows):
    if windows != 'whole cloud':
        monkeypatch.setattr(windows_of, 'WINDOW_MIN', 1)
        if windows == 'every tree':
            worlds.search_windows_of_every_tree(monkeypatch)
    service = AnotherService(environment.db)
    before = _answers(environment)
    # What is kept, made: the second request of a shape keeps its first
    # candidates (engine.reuse, db.cloud.firsts).
    assert _answers(environment) == before
    unchanged, stale = [], []
    for what, write in _writes(service):
        write()
        kept = _answers(environment)
        fresh_process = harness.Environment(backend,
                                            database_url=environment.db.url)
        try:
            fresh = _answers(fresh_process)
        finally:
            fresh_process.close()
        if kept == before:
            unchanged.append(what)
        stale += [(what, answer[0]) for answer, expected in zip(kept, fresh)
                  if answer != expected]
        before = kept
        # Asked again: what the first request after the write kept.
        assert _answers(environment) == kept, what
    assert stale == []
    assert unchanged == []
