"""One copy of the kept cloud per host under uwsgi's ``lazy-apps``.

With ``lazy-apps`` each worker builds the application itself, and would
read and keep the whole cloud (db.cloud) itself: a copy per worker. So the
first worker of a uwsgi master to build it writes the Cloud to files in
/dev/shm (a file system in memory), and maps them as the others do,
having waited for it: privately, they read the same pages, and a page a worker
writes (a patch) becomes its own, as after a fork. A Cloud mapped is
brought up to date as any is: its store records the transactions it saw,
or the texts it read.

The files are those of a pickle of the Cloud, its large arrays and bytes
(the columns, the rendered summaries) each in a file of its own, written
sparse (the room a column keeps free takes no memory). They are in a
directory named for the user, the master and the database (its URL's
hash), readable by that user only; a worker that exits removes it (a
worker started later builds it again), and the first worker of a master
removes those of masters gone.
"""

import atexit
import contextlib
import fcntl
import glob
import hashlib
import itertools
import logging
import mmap
import os
import pickle
import shutil
import threading
import time

import numpy as np

from placement_lite.db import cloud

LOG = logging.getLogger(__name__)

DIRECTORY = '/dev/shm'
#: Arrays and bytes at least this large get a file of their own.
LARGE = 16 * 1024
_PREFIX = 'placement-lite-%d-' % os.getuid()


@contextlib.contextmanager
def built_once(engine):
    """Around the start-up work that fills what is kept for ``engine``:
    in a uwsgi worker under lazy-apps, the
    first one of its master does it and writes the Cloud; the others find
    it written and map it first (their start-up work then finds the cloud
    read). Anywhere else, nothing more."""
    place = _place(engine.url)
    if place is None:
        yield
        return
    try:
        lock = _locked(place)
    except OSError as error:
        _unshared(place, error)
        yield
        return
    with lock:
        mapped = os.path.isdir(place)
        if mapped:
            _map(engine, place)
        else:
            _remove_those_of_masters_gone()
        yield
        if not mapped:
            try:
                _write(cloud.of(engine), place)
            except OSError as error:
                _unshared(place, error)
                return
            # Its own copy too goes for the pages the others map.
            _map(engine, place)
    atexit.register(_remove, place)


def _locked(place):
    """The lock file of ``place``, locked: the workers of a master take
    turns."""
    os.makedirs(DIRECTORY, exist_ok=True)
    lock = open(place + '.lock', 'a')
    try:
        os.chmod(lock.name, 0o600)
        fcntl.flock(lock, fcntl.LOCK_EX)
    except OSError:
        lock.close()
        raise
    return lock


def _unshared(place, error):
    LOG.warning('kept cloud not shared through %s (%s): this worker keeps '
                'a copy of its own', place, error)


def _place(url):
    try:
        # Importable only inside uwsgi.
        import uwsgi
    except ImportError:
        return None
    if uwsgi.worker_id() == 0 or not uwsgi.opt.get('lazy-apps'):
        return None
    return os.path.join(DIRECTORY, '%s%d-%s' % (
        _PREFIX, uwsgi.masterpid(),
        hashlib.sha256(str(url).encode()).hexdigest()[:16]))


def _write(kept, place):
    """``kept`` (a cloud.Cloud) pickled into the directory ``place`` (made
    whole in a directory of its own, then renamed; removed if it could
    not be, the file system full for one)."""
    started = time.monotonic()
    made = place + '.%d' % os.getpid()
    os.mkdir(made, 0o700)
    try:
        with kept.lock, open(os.path.join(made, 'cloud.pickle'),
                             'wb') as out:
            _Writer(out, made).dump(kept)
        os.rename(made, place)
    except OSError:
        shutil.rmtree(made, ignore_errors=True)
        raise
    LOG.info('kept cloud written to %s in %.1f s for the other workers',
             place, time.monotonic() - started)


class _Writer(pickle.Pickler):
    """Large arrays and bytes to files of their own; the lock left out."""

    def __init__(self, out, directory):
        super().__init__(out, protocol=pickle.HIGHEST_PROTOCOL)
        self._directory = directory
        self._names = itertools.count()

    def persistent_id(self, obj):
        if isinstance(obj, type(threading.RLock())):
            return ('lock',)
        if isinstance(obj, np.ndarray) and obj.nbytes >= LARGE:
            name = '%d.npy' % next(self._names)
            _write_sparse(os.path.join(self._directory, name), obj)
            return ('array', name)
        if isinstance(obj, bytes) and len(obj) >= LARGE:
            name = '%d.bytes' % next(self._names)
            with open(os.path.join(self._directory, name), 'wb') as out:
                out.write(obj)
            return ('bytes', name)
        return None


def _write_sparse(path, array):
    """``array`` as a .npy file whose trailing zeros are a hole. Written,
    not mapped: a full file system is an error, not a signal."""
    used = np.flatnonzero(array.view(np.uint8))
    end = used[-1] // array.itemsize + 1 if len(used) else 0
    with open(path, 'wb') as out:
        np.lib.format.write_array_header_1_0(
            out, np.lib.format.header_data_from_array_1_0(array))
        out.write(array[:end].tobytes())
        out.truncate(out.tell() + array[end:].nbytes)


def _map(engine, place):
    """Keep for ``engine`` the Cloud pickled in ``place``, its files
    mapped: the whole object, so that every part of it (a tree order,
    say) refers to the store it is kept with."""
    with open(os.path.join(place, 'cloud.pickle'), 'rb') as stored:
        cloud.adopt(engine, _Reader(stored, place).load())
    LOG.debug('kept cloud mapped from %s', place)


class _Reader(pickle.Unpickler):
    def __init__(self, stored, directory):
        super().__init__(stored)
        self._directory = directory

    def persistent_load(self, pid):
        kind = pid[0]
        if kind == 'lock':
            return threading.RLock()
        path = os.path.join(self._directory, pid[1])
        if kind == 'array':
            return np.load(path, mmap_mode='c').view(np.ndarray)
        with open(path, 'rb') as mapped:
            return mmap.mmap(mapped.fileno(), 0, flags=mmap.MAP_PRIVATE,
                             prot=mmap.PROT_READ)


def _remove(place):
    with _locked(place):
        shutil.rmtree(place, ignore_errors=True)


def _remove_those_of_masters_gone():
    for path in glob.glob(os.path.join(DIRECTORY, _PREFIX + '*')):
        try:
            master = int(os.path.basename(path)[len(_PREFIX):].split('-')[0])
            os.kill(master, 0)
        except ProcessLookupError:
            if os.path.isdir(path):
                shutil.rmtree(path, ignore_errors=True)
            else:
                os.unlink(path)
        except (ValueError, PermissionError):
            continue
