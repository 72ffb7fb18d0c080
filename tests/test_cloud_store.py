"""What a process keeps of the cloud (db.cloud), on its own: the packed
store patched as reads find writes, the holdings a search filters, the
summaries kept rendered and the trees in rank order, each against a plain
Python model of what it must hold. (That the answers built on it equal a
fresh process's: tests/test_candidates_snapshot.py.)"""

import random

import numpy as np
import pytest

from placement_lite.db.cloud import holdings
from placement_lite.db.cloud import orders
from placement_lite.db.cloud import store as kept
from placement_lite.db.cloud import summaries


def _uuid(id_):
    return '%08d-0000-4000-8000-000000000000' % id_


class Model:
    """{provider id: (parent, root, generation, identity, uuid,
    inventories, traits)} and {(provider id, rc id): used}: what the store
    must hold."""

    def __init__(self):
        self.providers = {}
        self.used = {}

    def state(self, ids):
        ids = sorted(ids)
        return (np.array(ids, np.int64),) + tuple(
            np.array([self.providers[i][column] for i in ids], np.int64)
            for column in range(4))

    def stock(self, ids):
        return ({i: self.providers[i][4] for i in ids},
                {i: self.providers[i][5] for i in ids},
                {i: self.providers[i][6] for i in ids})

    def usage(self, ids):
        pairs = sorted((p, rc) for p, rc in self.used if p in ids)
        return (np.array([p for p, _rc in pairs], np.int64),
                np.array([rc for _p, rc in pairs], np.int64),
                np.array([self.used[pair] for pair in pairs], np.int64))


def _read(store, model, ids, whole=False):
    """What reads.patch does with what a read of ``ids`` found."""
    store.compact_if_worth_it()
    state = model.state(ids)
    rows, current = store.placed(*state)
    if not current.all():
        stale = tuple(column[~current] for column in state)
        uuids, inventories, traits = model.stock(
            [i for i in stale[0].tolist() if i in model.providers])
        rows[~current] = store.restock(*stale, uuids, inventories, traits)
    if whole:
        store.remove(np.setdiff1d(store.rows.id[store.live_rows()],
                                  state[0]))
    used_ids, used_rcs, amounts = model.usage(set(ids))
    store.set_usage(rows, store.rows_of(used_ids), used_rcs, amounts)
    return rows


def _kept(store):
    """The store's live rows, as the model holds them."""
    found = {}
    used = {}
    for row in store.live_rows().tolist():
        id_ = int(store.rows.id[row])
        parent = int(store.rows.parent[row])
        inventories = store.inventories(row)
        found[id_] = (parent, int(store.rows.root[row]),
                      int(store.rows.generation[row]),
                      int(store.rows.identity[row]), store.uuid(row),
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
    return [(rc, rng.choice([4, 8, 16, 2 ** 70]), 1, rng.choice([4, 8]), 1)
            for rc in sorted(rng.sample(range(5), rng.randint(0, 3)))]


def _traits(rng):
    return tuple(sorted(rng.sample(['A', 'B', 'C',
                                    'MISC_SHARES_VIA_AGGREGATE'],
                                   rng.randint(0, 2))))


@pytest.mark.parametrize('seed', range(20))
def test_patches_keep_what_the_database_holds(seed, monkeypatch):
    """Random writes of every kind (usage, inventories, traits, parents,
    providers created and deleted, an id given again to a new provider),
    each read back whole or in part: after each, the rows read hold what
    the database does, and after a whole read the store holds the cloud.
    Compactions happen on the way."""
    monkeypatch.setattr(kept, 'MOST_DEAD', 0.05)
    rng = random.Random(seed)
    model = Model()
    store = kept.Store()
    store.sharing_trait = 'MISC_SHARES_VIA_AGGREGATE'
    _random_world(rng, model, 30)
    _read(store, model, model.providers, whole=True)
    assert _kept(store) == (model.providers, {})
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
            new = max(ids) + 1
            model.providers[new] = (kept.DEAD, new, 0, 0, _uuid(new),
                                    _inventories(rng), ())
        elif kind in ('delete', 'replace') and not any(
                model.providers[p][0] == changed for p in ids):
            del model.providers[changed]
            model.used = {pair: amount for pair, amount in model.used.items()
                          if pair[0] != changed}
            if kind == 'replace':
                # SQLite gives the id to the next provider created, at
                # the same generation: its identity tells them apart.
                model.providers[changed] = (kept.DEAD, changed, generation,
                                            identity + 1,
                                            _uuid(changed + 1000),
                                            _inventories(rng), ())
        before, clock = _by_provider(store), store.clock
        if rng.random() < 0.5:
            _read(store, model, model.providers, whole=True)
            assert _kept(store) == (model.providers, model.used)
        else:
            part = set(rng.sample(list(model.providers),
                                  len(model.providers) // 3))
            rows = _read(store, model, part)
            found, used = _kept(store)
            assert sorted(store.rows.id[rows].tolist()) == sorted(part)
            assert {p: found[p] for p in part} == {
                p: model.providers[p] for p in part}
            assert {pair: amount for pair, amount in used.items()
                    if pair[0] in part} == {
                pair: amount for pair, amount in model.used.items()
                if pair[0] in part}
        # Exactly the providers whose values the read changed are marked
        # changed since (engine.reuse trusts the others).
        after = _by_provider(store)
        changed = {p for p in set(before) | set(after)
                   if before.get(p) != after.get(p)}
        assert {p for p in set(before) | set(after)
                if store.changed_at[p] > clock} == changed


def test_a_provider_without_a_creation_time_is_read_every_time():
    model = Model()
    model.providers[1] = (kept.DEAD, 1, 0, kept.NO_IDENTITY, _uuid(1),
                          [(0, 4, 1, 4, 1)], ())
    store = kept.Store()
    _read(store, model, [1], whole=True)
    _rows, current = store.placed(*model.state([1]))
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


def _store_of_summaries(count):
    store = kept.Store()
    model = Model()
    for id_ in range(1, count + 1):
        model.providers[id_] = (kept.DEAD, id_, 0, 0, _uuid(id_),
                                [(0, 8, 1, 8, 1)], ('A',))
    _read(store, model, model.providers, whole=True)
    return store, model


def _render(summary, shape):
    return ('%s:%s:%s' % (summary.uuid, summary.resources, shape)).encode()


def _joined(shown, shape, render, piece=7):
    """What ``shown`` renders, in pieces of ``piece`` bytes, joined; the
    pieces checked."""
    pieces = shown.rendered(shape, render, piece)
    assert {len(made) for made in pieces[:-1]} <= {piece}
    assert 0 < len(pieces[-1]) <= piece
    return b''.join(pieces)


def test_summaries_kept_rendered_follow_their_providers(monkeypatch):
    monkeypatch.setattr(kept, 'MOST_DEAD', 0.01)
    store, model = _store_of_summaries(10)
    names = {0: 'VCPU'}
    every = summaries.Shown(store, store.rows.id[store.live_rows()], names)
    every.render_ahead('newest', _render)
    rendered = []

    def counting(summary, shape):
        rendered.append(summary.uuid)
        return _render(summary, shape)

    def expected(ids, used=()):
        return b', '.join(_render(summaries.ProviderSummary(
            _uuid(i), None, _uuid(i),
            (('VCPU', 8, 5 if i in used else 0),), ('A',)), 'newest')
            for i in ids)

    some = summaries.Shown(store, np.array([2, 3, 4, 7]), names)
    assert _joined(some, 'newest', counting) == expected([2, 3, 4, 7])
    assert rendered == []
    model.used[3, 0] = 5
    _read(store, model, model.providers, whole=True)
    assert _joined(some, 'newest', counting) == expected([2, 3, 4, 7], {3})
    assert rendered == [_uuid(3)]
    assert _joined(some, 'newest', counting) == expected([2, 3, 4, 7], {3})
    assert rendered == [_uuid(3)]
    # Another shape is rendered each time; names changed render again.
    assert _joined(some, 'older', counting).count(b'older') == 4
    assert len(rendered) == 5
    renamed = summaries.Shown(store, np.array([2]), {0: 'CPU'})
    assert _joined(renamed, 'newest', counting) == _render(
        summaries.ProviderSummary(_uuid(2), None, _uuid(2), (('CPU', 8, 0),),
                                  ('A',)), 'newest')
    # Rows dropped and renumbered by a compaction keep their members.
    for gone in (1, 5, 6, 8):
        del model.providers[gone]
    _read(store, model, model.providers, whole=True)
    rendered.clear()
    kept_ids = [2, 3, 4, 7, 9, 10]
    assert _joined(summaries.Shown(store, np.array(kept_ids), {0: 'CPU'}),
                   'newest', counting) == b', '.join(
        _render(summaries.ProviderSummary(
            _uuid(i), None, _uuid(i), (('CPU', 8, 5 if i == 3 else 0),),
            ('A',)), 'newest') for i in kept_ids)


def test_the_arena_is_made_again_once_much_was_rendered_since(monkeypatch):
    monkeypatch.setattr(summaries, 'REMAKE_AFTER', 10)
    store, model = _store_of_summaries(5)
    names = {0: 'VCPU'}
    summaries.Shown(store, store.rows.id[store.live_rows()], names).render_ahead(
        'newest', _render)
    for id_ in model.providers:
        model.used[id_, 0] = 1
    _read(store, model, model.providers, whole=True)
    shown = summaries.Shown(store, store.rows.id[store.live_rows()], names)
    first = _joined(shown, 'newest', _render)
    assert first.count(b"('VCPU', 8, 1)") == 5
    # Past REMAKE_AFTER bytes rendered since, they went into the arena.
    assert store.arena.since == {}
    assert store.arena.text == first + b', '
    assert _joined(shown, 'newest', _render) == first


@pytest.mark.parametrize('seed', range(10))
def test_trees_in_rank_order_as_sorted_keys_give_them(seed):
    rng = random.Random(seed)
    model = Model()
    _random_world(rng, model, 60)
    for id_, place in model.providers.items():
        for rc, *_rest in place[5]:
            if rng.random() < 0.5:
                model.used[id_, rc] = rng.randint(0, 6)
    store = kept.Store()
    _read(store, model, model.providers, whole=True)
    sorted_by = ((1, -1), (2, 1))
    order = orders.TreeOrder(store, sorted_by)
    held = {}
    for id_, (_parent, root, *_g, inventories, _traits) in (
            model.providers.items()):
        for rc, capacity, *_units in inventories:
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
