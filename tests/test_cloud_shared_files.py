"""The kept cloud written to files and mapped (db/cloud/shared.py), on
its own: a mapped store holds what the written one did and is patched
as any store; a file system that cannot take it leaves each worker its
own copy. (Lazy uwsgi workers sharing it: tests/test_shared_store.py.)"""

import errno
import logging
import os
import random
import types

import numpy as np
import pytest

from placement_lite.db.cloud import shared
from placement_lite.db.cloud import store as kept
from tests.test_cloud_store import Model
from tests.test_cloud_store import _kept
from tests.test_cloud_store import _random_world
from tests.test_cloud_store import _read

ENGINE = types.SimpleNamespace(url='sqlite:///shared-files')


def _world(count=200):
    rng = random.Random(7)
    model = Model()
    store = kept.Store()
    store.sharing_trait = 'MISC_SHARES_VIA_AGGREGATE'
    _random_world(rng, model, count)
    for id_, (_p, _r, _g, _i, _u, inventories, _t) in list(
            model.providers.items())[::3]:
        for rc, *_rest in inventories:
            model.used[id_, rc] = 1
    _read(store, model, model.providers, whole=True)
    return model, store


@pytest.fixture
def place(tmp_path, monkeypatch):
    """Every array in a file of its own, under ``tmp_path``."""
    monkeypatch.setattr(shared, 'LARGE', 64)
    monkeypatch.setattr(shared, 'DIRECTORY', str(tmp_path))
    where = str(tmp_path / 'place')
    monkeypatch.setattr(shared, '_place', lambda url: where)
    return where


def _built_once(store, monkeypatch):
    monkeypatch.setattr(shared.cloud, 'of', lambda engine: store)
    with shared.built_once(ENGINE):
        pass


def test_a_mapped_store_holds_what_was_written_and_takes_patches(
        place, monkeypatch):
    model, written = _world()
    before = _kept(written)
    _built_once(written, monkeypatch)
    # The writer maps its own files too.
    assert sorted(os.listdir(place))[-1] == 'store.pickle'
    assert isinstance(written.rows.id.base, np.memmap)
    assert _kept(written) == before

    mapping = kept.Store()
    _built_once(mapping, monkeypatch)
    assert _kept(mapping) == before
    # Patched privately: the files, and the writer, keep what was written.
    changed = next(iter(model.used))
    model.used[changed] += 2
    moved = max(model.providers)
    parent, root, generation, *rest = model.providers[moved]
    model.providers[moved] = (parent, root, generation + 1, *rest[:-1],
                              ('A', 'C'))
    _read(mapping, model, model.providers, whole=True)
    assert _kept(mapping) == (model.providers, model.used)
    assert _kept(written) == before
    assert _kept(_mapped_again(place, monkeypatch)) == before


def _mapped_again(place, monkeypatch):
    store = kept.Store()
    monkeypatch.setattr(shared.cloud, 'of', lambda engine: store)
    shared._map(store, place)
    return store


def test_a_full_file_system_leaves_each_worker_its_own_copy(
        place, monkeypatch, caplog):
    _model, store = _world()
    before = _kept(store)

    def full(path, array):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), path)

    monkeypatch.setattr(shared, '_write_sparse', full)
    with caplog.at_level(logging.WARNING, logger=shared.__name__):
        _built_once(store, monkeypatch)
    assert not isinstance(store.rows.id.base, np.memmap)
    assert _kept(store) == before
    # Nothing half written is left for the next worker to map.
    assert sorted(os.listdir(shared.DIRECTORY)) == ['place.lock']
    assert [record.getMessage() for record in caplog.records] == [
        'kept cloud not shared through %s ([Errno 28] No space left on '
        'device: %r): this worker keeps a copy of its own'
        % (place, os.path.join(place + '.%d' % os.getpid(), '0.npy'))]
