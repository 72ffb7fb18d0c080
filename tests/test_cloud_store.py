"""What a process keeps of the cloud (db.cloud), on its own: the packed
store patched as reads find writes, the holdings a search filters, the
summaries kept rendered and the trees in rank order, each against a plain
Python model of what it must hold. The model is written to a database
row for row, as another service would write it, and the store is
brought up to it by db/cloud/reads.py's own reads. (That the answers
built on it equal a fresh process's: tests/test_cloud_view.py.)"""

import datetime
import itertools
import random

import numpy as np
import pytest
import sqlalchemy as sa

from placement_lite.db import cloud
from placement_lite.db import tables
from placement_lite.db.cloud import holdings
from placement_lite.db.cloud import orders
from placement_lite.db.cloud import reads
from placement_lite.db.cloud import store as kept
from placement_lite.db.cloud import summaries
from tests import harness

rp = tables.resource_providers
#: The traits the model's providers have: three custom, and the one of
#: sharing providers.
TRAITS = ('CUSTOM_A', 'CUSTOM_B', 'CUSTOM_C', 'MISC_SHARES_VIA_AGGREGATE')
#: A provider's creation time is this plus its identity in seconds.
CREATED = datetime.datetime(2026, 1, 1)
#: A capacity beyond store.CAPACITY_BOUND: (2**31 - 1) * 2**39.
HUGE = (2 ** 31 - 1, 0, 2.0 ** 39)


def _uuid(id_):
    return '%08d-0000-4000-8000-000000000000' % id_


class Model:
    """{provider id: (parent, root, generation, identity, uuid,
    inventories, traits)} and {(provider id, rc id): used}: what the
    database holds, and so the store must. An inventory is (rc id, total,
    reserved, allocation ratio, min_unit, max_unit, step_size), the traits
    a frozenset of names, the identity a number of seconds after CREATED
    (kept.NO_IDENTITY: no creation time)."""

    def __init__(self):
        self.providers = {}
        self.used = {}

    def copy(self):
        copied = Model()
        copied.providers = dict(self.providers)
        copied.used = dict(self.used)
        return copied


class Written:
    """A database holding a Model, written row for row in one transaction
    per change as another service would write it (generations bumped
    where the model bumps them, nothing else)."""

    def __init__(self, db):
        self.db = db
        self.model = Model()
        with db.writer() as conn:
            conn.execute(tables.traits.insert(), [
                {'name': name} for name in TRAITS if name.startswith(
                    'CUSTOM_')])
            self.trait_ids = dict(conn.execute(sa.select(
                tables.traits.c.name, tables.traits.c.id).where(
                tables.traits.c.name.in_(TRAITS))).all())
            self.ids_reused = reads.ids_reused(conn)
        self.highest = 0

    def next_id(self, model):
        """The id the database gives the next provider created: where ids
        are given again (reads.ids_reused: SQLite), one more than the
        highest there is now, a deleted provider's perhaps; on
        PostgreSQL, from a sequence, never one given before."""
        return 1 + (max(model.providers) if self.ids_reused
                    else max([self.highest, *model.providers]))

    def write(self, model):
        """Bring the database from the last model written to ``model``."""
        old = self.model
        with self.db.writer() as conn:
            gone = [id_ for id_, place in old.providers.items()
                    if model.providers.get(id_, place)[3:5] != place[3:5]
                    or id_ not in model.providers]
            added = sorted(id_ for id_ in model.providers
                           if id_ not in old.providers or id_ in gone)
            freed = [pair for pair, amount in old.used.items()
                     if model.used.get(pair) != amount or pair[0] in gone]
            for provider, rc in freed:
                conn.execute(tables.allocations.delete().where(
                    tables.allocations.c.resource_provider_id == provider,
                    tables.allocations.c.resource_class_id == rc))
            for id_ in gone:
                self._delete(conn, id_)
            for id_ in added:
                self._create(conn, id_, model.providers[id_])
            for id_ in added:
                self._place(conn, id_, model.providers[id_])
            for id_, values in model.providers.items():
                was = old.providers.get(id_)
                if id_ in added or was == values:
                    continue
                if was[:3] != values[:3]:
                    self._place(conn, id_, values)
                if was[5] != values[5]:
                    self._stock(conn, id_, values[5], delete=True)
                if was[6] != values[6]:
                    self._traits(conn, id_, values[6], delete=True)
            taken = [{'resource_provider_id': provider,
                      'resource_class_id': rc, 'used': amount,
                      'consumer_id': '%08d-%04d-4000-8000-000000000000' % (
                          provider, rc)}
                     for (provider, rc), amount in model.used.items()
                     if old.used.get((provider, rc)) != amount
                     or provider in gone]
            if taken:
                conn.execute(tables.allocations.insert(), taken)
        self.model = model.copy()
        self.highest = max([self.highest, *model.providers])

    def _create(self, conn, id_, values):
        _parent, _root, generation, identity, uuid, inventories, traits = (
            values)
        conn.execute(rp.insert().values(
            id=id_, uuid=uuid, name=uuid, generation=generation,
            created_at=None if identity == kept.NO_IDENTITY
            else CREATED + datetime.timedelta(seconds=identity)))
        self._stock(conn, id_, inventories)
        self._traits(conn, id_, traits)

    @staticmethod
    def _place(conn, id_, values):
        parent, root, generation = values[:3]
        conn.execute(rp.update().where(rp.c.id == id_).values(
            parent_provider_id=None if parent == kept.DEAD else parent,
            root_provider_id=root, generation=generation))

    @staticmethod
    def _delete(conn, id_):
        for table in (tables.inventories, tables.resource_provider_traits):
            conn.execute(table.delete().where(
                table.c.resource_provider_id == id_))
        # A root refers to itself: MariaDB checks that on delete.
        conn.execute(rp.update().where(rp.c.id == id_).values(
            root_provider_id=None))
        conn.execute(rp.delete().where(rp.c.id == id_))

    @staticmethod
    def _rows(conn, table, id_, rows, delete=False):
        """``rows`` of the provider ``id_`` (dicts, without its id) put in
        ``table``; with ``delete`` in place of those it had."""
        if delete:
            conn.execute(table.delete().where(
                table.c.resource_provider_id == id_))
        if rows:
            conn.execute(table.insert(), [
                dict(row, resource_provider_id=id_) for row in rows])

    def _stock(self, conn, id_, inventories, delete=False):
        self._rows(conn, tables.inventories, id_, [
            {'resource_class_id': rc, 'total': total, 'reserved': reserved,
             'allocation_ratio': ratio, 'min_unit': min_unit,
             'max_unit': max_unit, 'step_size': step}
            for rc, total, reserved, ratio, min_unit, max_unit, step
            in inventories], delete)

    def _traits(self, conn, id_, names, delete=False):
        self._rows(conn, tables.resource_provider_traits, id_, [
            {'trait_id': self.trait_ids[name]} for name in names], delete)

    def expected(self):
        """What the store must keep of the model: (the providers as
        _kept gives them, the usage)."""
        found = {}
        for id_, (parent, root, generation, _identity, uuid, inventories,
                  traits) in self.model.providers.items():
            found[id_] = (parent, root, generation, uuid, [
                (rc, tables.capacity_of(total, reserved, ratio), min_unit,
                 max_unit, step)
                for rc, total, reserved, ratio, min_unit, max_unit, step
                in inventories], tuple(sorted(traits,
                                              key=self.trait_ids.get)))
        return found, dict(self.model.used)


def _scope_of_trees(rng):
    """How _restock reads stale stocks: the trees of their roots, or at
    random the whole cloud (as a View does once the trees are
    many)."""
    def scope_of_trees(roots):
        if rng.random() < 0.5:
            return reads.WHOLE_CLOUD, {}
        return reads.Scope(by_roots=True), {'roots': sorted(roots)}
    return scope_of_trees


def _read_whole(written, kept_cloud, rng=None):
    """The store of ``kept_cloud`` brought up to the whole cloud by
    reads.read_whole."""
    with written.db.reader() as conn:
        return reads.read_whole(conn, kept_cloud,
                                _scope_of_trees(rng or random.Random(0)))


def _read_part(written, kept_cloud, roots, also, rng):
    """reads.read_scope of the trees ``roots`` and the providers
    ``also``: the rows it covered."""
    with written.db.reader() as conn:
        return reads.read_scope(
            conn, kept_cloud, reads.Scope(by_roots=True, with_also=True),
            {'roots': sorted(roots), 'also_ids': sorted(also)},
            _scope_of_trees(rng))


@pytest.fixture
def database(backend):
    db = harness.fresh_database(backend)
    yield db
    db.dispose()


def _cloud():
    """An empty cloud.Cloud, and its store."""
    made = cloud.Cloud()
    return made, made.store


def _kept(store):
    """The store's live rows, as Written.expected gives them."""
    found = {}
    used = {}
    for row in store.live_rows().tolist():
        id_ = int(store.rows.id[row])
        parent = int(store.rows.parent[row])
        inventories = store.inventories(row)
        found[id_] = (parent, int(store.rows.root[row]),
                      int(store.rows.generation[row]), store.uuid(row),
                      [(rc, capacity, min_unit, max_unit, step) for
                       rc, capacity, _used, min_unit, max_unit, step
                       in inventories], store.trait_names(row))
        used.update({(id_, rc): amount for rc, _c, amount, *_units
                     in inventories if amount})
    return found, used


def _by_provider(store):
    """{provider id: what the store keeps of it, usage included}."""
    found, used = _kept(store)
    return {id_: (kept_values, sorted((rc, amount) for (p, rc), amount
                                      in used.items() if p == id_))
            for id_, kept_values in found.items()}


def _random_world(rng, model, count):
    for id_ in range(1, count + 1):
        root = id_ if id_ < 3 or rng.random() < 0.6 else rng.randrange(
            1, id_)
        root = model.providers[root][1] if root in model.providers else id_
        parent = kept.DEAD if root == id_ else root
        model.providers[id_] = (parent, root, 0, 0, _uuid(id_),
                                _inventories(rng), _traits(rng))


def _inventories(rng):
    """Inventories of up to three classes: (total, reserved, ratio) of
    capacities 4, 8, 9 and one beyond store.CAPACITY_BOUND."""
    return [(rc, *rng.choice([(4, 0, 1.0), (8, 0, 1.0), (8, 2, 1.5), HUGE]),
             1, rng.choice([4, 8]), 1)
            for rc in sorted(rng.sample(range(5), rng.randint(0, 3)))]


def _traits(rng):
    return frozenset(rng.sample(TRAITS, rng.randint(0, 2)))


@pytest.mark.mysql
@pytest.mark.parametrize('seed', range(20))
def test_patches_keep_what_the_database_holds(database, seed, monkeypatch):
    """Random writes of every kind (usage, inventories, traits, parents,
    providers created and deleted, an id given again to a new provider
    where the database gives ids again), each read back by db/cloud/reads
    whole or in part: after each, the rows read hold what the database
    does, and after a whole read the store holds the cloud. Compactions
    happen on the way."""
    monkeypatch.setattr(kept, 'MOST_DEAD', 0.05)
    rng = random.Random(seed)
    written = Written(database)
    model = Model()
    kept_cloud, store = _cloud()
    _random_world(rng, model, 30)
    # Each provider created has a creation time of its own.
    identities = itertools.count(1)
    written.write(model)
    _read_whole(written, kept_cloud, rng)
    assert _kept(store) == written.expected()
    for _step in range(40):
        ids = list(model.providers)
        changed = rng.choice(ids)
        parent, root, generation, identity, uuid, inventories, traits = (
            model.providers[changed])
        kind = rng.choice(['use', 'free', 'stock', 'traits', 'move',
                           'create', 'delete', 'replace'])
        if kind == 'use':
            for rc, *_rest in inventories:
                model.used[changed, rc] = rng.randint(1, 4)
        elif kind == 'free':
            model.used = {pair: amount for pair, amount in model.used.items()
                          if pair[0] != changed}
        elif kind == 'stock':
            model.providers[changed] = (parent, root, generation + 1,
                                        identity, uuid, _inventories(rng),
                                        traits)
            model.used = {(p, rc): amount for (p, rc), amount
                          in model.used.items() if p != changed or rc in {
                              rc for rc, *_ in model.providers[p][5]}}
        elif kind == 'traits':
            model.providers[changed] = (parent, root, generation + 1,
                                        identity, uuid, inventories,
                                        _traits(rng))
        elif kind == 'move' and parent != kept.DEAD:
            new_root = rng.choice([p for p in ids if model.providers[p][0]
                                   == kept.DEAD])
            model.providers[changed] = (new_root, new_root, generation,
                                        identity, uuid, inventories, traits)
        elif kind == 'create':
            new = written.next_id(model)
            model.providers[new] = (kept.DEAD, new, 0, next(identities),
                                    _uuid(new), _inventories(rng),
                                    frozenset())
        elif kind in ('delete', 'replace') and not any(
                model.providers[p][0] == changed for p in ids):
            del model.providers[changed]
            model.used = {pair: amount for pair, amount in model.used.items()
                          if pair[0] != changed}
            if kind == 'replace':
                # SQLite gives the id to the next provider created, at
                # the same generation: its identity (creation time)
                # tells them apart. PostgreSQL gives a new id.
                new = changed if written.ids_reused else written.next_id(
                    model)
                model.providers[new] = (kept.DEAD, new, generation,
                                        next(identities), _uuid(new + 1000),
                                        _inventories(rng), frozenset())
        written.write(model)
        before, changes = _by_provider(store), store.versions.changes
        if rng.random() < 0.5:
            _read_whole(written, kept_cloud, rng)
            assert _kept(store) == written.expected()
        else:
            roots = {values[1] for values in model.providers.values()}
            roots = set(rng.sample(sorted(roots), len(roots) // 4))
            also = set(rng.sample(sorted(model.providers),
                                  len(model.providers) // 6))
            part = {p for p, values in model.providers.items()
                    if values[1] in roots or p in also}
            rows = _read_part(written, kept_cloud, roots, also, rng)
            found, used = _kept(store)
            expected, expected_used = written.expected()
            assert sorted(store.rows.id[rows].tolist()) == sorted(part)
            assert {p: found[p] for p in part} == {
                p: expected[p] for p in part}
            assert {pair: amount for pair, amount in used.items()
                    if pair[0] in part} == {
                pair: amount for pair, amount in expected_used.items()
                if pair[0] in part}
        # Exactly the providers whose values the read changed are marked
        # changed since (db.cloud.firsts trusts the others).
        after = _by_provider(store)
        changed = {p for p in set(before) | set(after)
                   if before.get(p) != after.get(p)}
        assert {p for p in set(before) | set(after)
                if store.changed_at[p] > changes} == changed


@pytest.mark.mysql
@pytest.mark.only_backends('sqlite', 'mysql')
def test_a_provider_without_a_creation_time_is_read_every_time(database):
    """Where ids are given again, a provider without a creation time has
    no identity: its kept stock is never taken for current."""
    written = Written(database)
    model = Model()
    model.providers[1] = (kept.DEAD, 1, 0, kept.NO_IDENTITY, _uuid(1),
                          [(0, 4, 0, 1.0, 1, 4, 1)], frozenset())
    written.write(model)
    kept_cloud, store = _cloud()
    _read_whole(written, kept_cloud)
    with database.reader() as conn:
        state = reads.State.of(conn.execute(sa.select(
            rp.c.id, rp.c.parent_provider_id, rp.c.root_provider_id,
            rp.c.generation, sa.cast(rp.c.created_at, sa.Text))).all())
    _rows, current = store.placed(*state)
    assert current.tolist() == [False]


def _holders(count, seed):
    rng = random.Random(seed)
    return {id_: (rng.randrange(10), rng.randint(-2, 9), rng.randint(0, 6),
                  rng.randint(1, 3), rng.randint(3, 8), rng.choice([1, 2]))
            for id_ in sorted(rng.sample(range(1, 400), count))}


def _held(model):
    ids = sorted(model)
    columns = list(zip(*(model[i] for i in ids))) or [()] * 6
    return holdings.Holdings(np.array(ids, np.int64), *(
        np.array(column, np.int64) for column in columns))


@pytest.mark.parametrize('seed', range(10))
def test_holdings_filter_as_the_search_did_over_dicts(seed):
    model = _holders(60, seed)
    held = _held(model)
    assert dict(held.items()) == {
        id_: (root, capacity, used, min_unit, max_unit, step)
        for id_, (root, capacity, used, min_unit, max_unit, step)
        in model.items()}
    for amount in range(1, 9):
        assert list(held.with_room(amount)) == [
            id_ for id_, (_r, capacity, used, *_units) in model.items()
            if amount <= capacity - used]
        assert list(held.within_units(amount)) == [
            id_ for id_, (_r, _c, _u, low, high, step) in model.items()
            if low <= amount <= high and amount % step == 0]
    other = _holders(40, seed + 100)
    union = held.union(_held(other))
    assert dict(union.items()) == {**other, **model}
    assert union.pairs() == [(id_, values[0]) for id_, values
                             in sorted({**other, **model}.items())]


def _written_and_read(written, kept_cloud, model):
    """``model`` written, and the store brought up to the whole cloud."""
    written.write(model)
    _read_whole(written, kept_cloud)


def _cloud_of_summaries(database, count):
    """(A cloud.Cloud, its database, the model written): ``count`` roots
    of 8 VCPU and the trait CUSTOM_A."""
    kept_cloud, _store = _cloud()
    written = Written(database)
    model = Model()
    for id_ in range(1, count + 1):
        model.providers[id_] = (kept.DEAD, id_, 0, 0, _uuid(id_),
                                [(0, 8, 0, 1.0, 1, 8, 1)],
                                frozenset({'CUSTOM_A'}))
    _written_and_read(written, kept_cloud, model)
    return kept_cloud, written, model


def _render(summary, shape):
    return ('%s:%s:%s' % (summary.uuid, summary.resources, shape)).encode()


def _joined(shown, shape, render, piece=7):
    """What ``shown`` renders, in pieces of ``piece`` bytes, joined; the
    pieces checked."""
    pieces = shown.rendered(shape, render, piece)
    assert {len(made) for made in pieces[:-1]} <= {piece}
    assert 0 < len(pieces[-1]) <= piece
    return b''.join(pieces)


@pytest.mark.only_backends('sqlite')
def test_summaries_kept_rendered_follow_their_providers(database,
                                                        monkeypatch):
    monkeypatch.setattr(kept, 'MOST_DEAD', 0.01)
    kept_cloud, written, model = _cloud_of_summaries(database, 10)
    store = kept_cloud.store
    names = {0: 'VCPU'}
    every = summaries.Shown(kept_cloud, store.rows.id[store.live_rows()], names)
    every.render_ahead('newest', _render)
    rendered = []

    def counting(summary, shape):
        rendered.append(summary.uuid)
        return _render(summary, shape)

    def expected(ids, used=()):
        return b', '.join(_render(summaries.ProviderSummary(
            _uuid(i), None, _uuid(i),
            (('VCPU', 8, 5 if i in used else 0),), ('CUSTOM_A',)), 'newest')
            for i in ids)

    some = summaries.Shown(kept_cloud, np.array([2, 3, 4, 7]), names)
    assert _joined(some, 'newest', counting) == expected([2, 3, 4, 7])
    assert rendered == []
    model.used[3, 0] = 5
    _written_and_read(written, kept_cloud, model)
    assert _joined(some, 'newest', counting) == expected([2, 3, 4, 7], {3})
    assert rendered == [_uuid(3)]
    assert _joined(some, 'newest', counting) == expected([2, 3, 4, 7], {3})
    assert rendered == [_uuid(3)]
    # Another form is rendered each time; names changed render again.
    assert _joined(some, 'older', counting).count(b'older') == 4
    assert len(rendered) == 5
    renamed = summaries.Shown(kept_cloud, np.array([2]), {0: 'CPU'})
    assert _joined(renamed, 'newest', counting) == _render(
        summaries.ProviderSummary(_uuid(2), None, _uuid(2), (('CPU', 8, 0),),
                                  ('CUSTOM_A',)), 'newest')
    # Rows dropped and renumbered by a compaction keep their members.
    for gone in (1, 5, 6, 8):
        del model.providers[gone]
    _written_and_read(written, kept_cloud, model)
    rendered.clear()
    kept_ids = [2, 3, 4, 7, 9, 10]
    assert _joined(summaries.Shown(kept_cloud, np.array(kept_ids), {0: 'CPU'}),
                   'newest', counting) == b', '.join(
        _render(summaries.ProviderSummary(
            _uuid(i), None, _uuid(i), (('CPU', 8, 5 if i == 3 else 0),),
            ('CUSTOM_A',)), 'newest') for i in kept_ids)


@pytest.mark.only_backends('sqlite')
def test_the_arena_is_made_again_once_much_was_rendered_since(database,
                                                              monkeypatch):
    monkeypatch.setattr(summaries, 'REMAKE_AFTER', 10)
    kept_cloud, written, model = _cloud_of_summaries(database, 5)
    store = kept_cloud.store
    names = {0: 'VCPU'}
    summaries.Shown(kept_cloud, store.rows.id[store.live_rows()], names).render_ahead(
        'newest', _render)
    for id_ in model.providers:
        model.used[id_, 0] = 1
    _written_and_read(written, kept_cloud, model)
    shown = summaries.Shown(kept_cloud, store.rows.id[store.live_rows()], names)
    first = _joined(shown, 'newest', _render)
    assert first.count(b"('VCPU', 8, 1)") == 5
    # Past REMAKE_AFTER bytes rendered since, they went into the arena.
    assert kept_cloud.arena.since == {}
    assert kept_cloud.arena.text == first + b', '
    assert _joined(shown, 'newest', _render) == first


@pytest.mark.only_backends('sqlite')
@pytest.mark.parametrize('seed', range(10))
def test_trees_in_rank_order_as_sorted_keys_give_them(database, seed):
    rng = random.Random(seed)
    written = Written(database)
    model = Model()
    _random_world(rng, model, 60)
    for id_, place in model.providers.items():
        for rc, *_rest in place[5]:
            if rng.random() < 0.5:
                model.used[id_, rc] = rng.randint(0, 6)
    kept_cloud, store = _cloud()
    _written_and_read(written, kept_cloud, model)
    sorted_by = ((1, -1), (2, 1))
    order = orders.TreeOrder(store, sorted_by)
    held = {}
    for id_, (_parent, root, *_g, inventories, _traits) in (
            model.providers.items()):
        for rc, total, reserved, ratio, *_units in inventories:
            capacity = tables.capacity_of(total, reserved, ratio)
            free = min(capacity, kept.CAPACITY_BOUND) - model.used.get(
                (id_, rc), 0)
            amount, most = held.setdefault(root, {}).get(rc, (0, 0))
            held[root][rc] = (amount + free, max(most, free))
    roots = sorted({place[1] for place in model.providers.values()})
    keys = sorted((*(sign * held.get(root, {}).get(rc, (0, 0))[0]
                     for rc, sign in sorted_by), root) for root in roots)
    asked = {1: (rng.randint(0, 12), rng.randint(0, 4))}

    def holds(root):
        return all(held.get(root, {}).get(rc, (0, 0))[0] >= amount
                   and held.get(root, {}).get(rc, (0, 0))[1] >= of_one
                   for rc, (amount, of_one) in asked.items())

    assert [order.key_of(root) for root in roots] == [
        next(key for key in keys if key[-1] == root) for root in roots]
    expected = [key for key in keys if holds(key[-1])]
    found, after = [], None
    while True:
        batch, after = order.after(after, 5, asked)
        found.extend(key for key, _root in batch)
        if after is None or len(batch) < 5:
            break
    assert found == expected
    lowest = (keys[len(keys) // 2][0],)
    assert [key for key, _root in order.after(None, 1000, asked, lowest)[0]
            ] == [key for key in expected if key >= lowest]
