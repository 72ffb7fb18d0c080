"""What a process keeps per provider is pruned of deleted providers, never
emptied (db.stock.ByProvider)."""

import sqlalchemy as sa

from placement_lite.db import stock
from placement_lite.db import tables


def _providers(conn, ids):
    conn.execute(tables.resource_providers.insert(), [
        {'id': id_, 'uuid': '%036d' % id_, 'name': 'rp%d' % id_,
         'generation': 0, 'root_provider_id': id_} for id_ in ids])


def _conn():
    engine = sa.create_engine('sqlite://')
    tables.metadata.create_all(engine)
    return engine.connect()


def test_entries_of_deleted_providers_are_dropped_past_the_threshold(
        monkeypatch):
    monkeypatch.setattr(stock, 'PRUNE_AT', 4)
    conn = _conn()
    _providers(conn, [1, 2, 3])
    kept = stock.ByProvider()
    kept.update({1: 'a', 2: 'b', 3: 'c', 7: 'gone', 8: 'gone'})
    kept.prune(conn)
    assert kept == {1: 'a', 2: 'b', 3: 'c'}
    assert kept.prune_at == 6


def test_nothing_is_read_or_dropped_under_the_threshold(monkeypatch):
    monkeypatch.setattr(stock, 'PRUNE_AT', 4)
    conn = _conn()
    kept = stock.ByProvider()
    kept.update({7: 'gone', 8: 'gone'})
    kept.prune(conn)
    assert kept == {7: 'gone', 8: 'gone'}
    assert kept.prune_at == 4


def test_a_cache_of_live_providers_is_never_emptied(monkeypatch):
    monkeypatch.setattr(stock, 'PRUNE_AT', 2)
    conn = _conn()
    _providers(conn, range(1, 11))
    kept = stock.ByProvider()
    kept.update({id_: id_ for id_ in range(1, 11)})
    kept.prune(conn)
    assert sorted(kept) == list(range(1, 11))
    assert kept.prune_at == 20
