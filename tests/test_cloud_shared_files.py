"""The kept cloud written to files and mapped (db/cloud/shared.py), on
its own: a mapped Cloud holds what the written one did and is patched as
any is, every part of it (a tree order) following its own store; a file
system that cannot take it leaves each worker its own copy. (Lazy uwsgi
workers sharing it: tests/test_shared_store.py.)"""

import errno
import logging
import os
import random
import types

import numpy as np
import pytest

from placement_lite.db import cloud
from placement_lite.db.cloud import shared
from tests import harness
from tests.test_cloud_store import Model
from tests.test_cloud_store import Written
from tests.test_cloud_store import _kept
from tests.test_cloud_store import _random_world
from tests.test_cloud_store import _read_whole

ENGINE = types.SimpleNamespace(url='sqlite:///shared-files')
#: The tree order the tests ask for: the most of class 1 free first.
SORTED_BY = ((1, -1),)


@pytest.fixture
def database():
    db = harness.fresh_database('sqlite')
    yield db
    db.dispose()


def _world(database, count=200):
    """(The Model written to ``database``, its Written, a Cloud that read
    it whole.)"""
    rng = random.Random(7)
    model = Model()
    _random_world(rng, model, count)
    for id_, (_p, _r, _g, _i, _u, inventories, _t) in list(
            model.providers.items())[::3]:
        for rc, *_rest in inventories:
            model.used[id_, rc] = 1
    written = Written(database)
    written.write(model)
    kept_cloud = cloud.Cloud()
    _read_whole(written, kept_cloud)
    return model, written, kept_cloud


@pytest.fixture
def place(tmp_path, monkeypatch):
    """Every array in a file of its own, under ``tmp_path``."""
    monkeypatch.setattr(shared, 'LARGE', 64)
    monkeypatch.setattr(shared, 'DIRECTORY', str(tmp_path))
    where = str(tmp_path / 'place')
    monkeypatch.setattr(shared, '_place', lambda url: where)
    return where


def _built_once(kept_cloud, monkeypatch):
    """shared.built_once for ENGINE, ``kept_cloud`` kept for it before;
    the Cloud kept for it after (a mapped one, when the files could be
    written or were there)."""
    kept = {'cloud': kept_cloud}
    monkeypatch.setattr(shared.cloud, 'of', lambda engine: kept['cloud'])
    monkeypatch.setattr(shared.cloud, 'adopt',
                        lambda engine, mapped: kept.update(cloud=mapped))
    with shared.built_once(ENGINE):
        pass
    return kept['cloud']


def _tree_keys(kept_cloud):
    """Every tree's key in the Cloud's tree order, by root."""
    order = kept_cloud.tree_order(SORTED_BY)
    store = kept_cloud.store
    roots = set(store.rows.root[store.live_rows()].tolist())
    return {root: order.key_of(root) for root in roots}


def test_a_mapped_cloud_holds_what_was_written_and_takes_patches(
        database, place, monkeypatch):
    model, written, writer = _world(database)
    before = _kept(writer.store)
    writer = _built_once(writer, monkeypatch)
    # The writer maps its own files too.
    assert sorted(os.listdir(place))[-1] == 'cloud.pickle'
    assert isinstance(writer.store.rows.id.base, np.memmap)
    assert _kept(writer.store) == before

    mapping = _built_once(cloud.Cloud(), monkeypatch)
    assert _kept(mapping.store) == before
    # Patched privately: the files, and the writer, keep what was written.
    changed = next(iter(model.used))
    model.used[changed] += 2
    moved = max(model.providers)
    parent, root, generation, *rest = model.providers[moved]
    model.providers[moved] = (parent, root, generation + 1, *rest[:-1],
                              frozenset({'CUSTOM_A', 'CUSTOM_C'}))
    written.write(model)
    _read_whole(written, mapping)
    assert _kept(mapping.store) == written.expected()
    assert _kept(writer.store) == before
    assert _kept(_built_once(cloud.Cloud(), monkeypatch).store) == before


def test_a_mapped_cloud_s_tree_order_follows_its_store(
        database, place, monkeypatch):
    """The tree order made before the Cloud was written (at start-up,
    with a rank key) is made again from the mapped Cloud's own store once
    a read patches it: a mapped order kept following a copy of the store
    that no read patches would rank the trees as they were at start-up
    forever."""
    model, written, writer = _world(database)
    # Made before the Cloud is written, as at start-up.
    started = _tree_keys(writer)
    _built_once(writer, monkeypatch)
    mapping = _built_once(cloud.Cloud(), monkeypatch)
    assert mapping.tree_orders[SORTED_BY].store is mapping.store
    for pair in [pair for pair in model.used if pair[1] == 1]:
        del model.used[pair]
    written.write(model)
    _read_whole(written, mapping)
    fresh = cloud.Cloud()
    _read_whole(written, fresh)
    assert _tree_keys(mapping) == _tree_keys(fresh) != started


def test_a_full_file_system_leaves_each_worker_its_own_copy(
        database, place, monkeypatch, caplog):
    _model, _written, kept_cloud = _world(database)
    before = _kept(kept_cloud.store)

    def full(path, array):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), path)

    monkeypatch.setattr(shared, '_write_sparse', full)
    with caplog.at_level(logging.WARNING, logger=shared.__name__):
        kept = _built_once(kept_cloud, monkeypatch)
    assert kept is kept_cloud
    assert not isinstance(kept.store.rows.id.base, np.memmap)
    assert _kept(kept.store) == before
    # Nothing half written is left for the next worker to map.
    assert sorted(os.listdir(shared.DIRECTORY)) == ['place.lock']
    assert [record.getMessage() for record in caplog.records] == [
        'kept cloud not shared through %s ([Errno 28] No space left on '
        'device: %r): this worker keeps a copy of its own'
        % (place, os.path.join(place + '.%d' % os.getpid(), '0.npy'))]
