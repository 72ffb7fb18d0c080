"""WSGI entry point for uwsgi and other servers: ``placement_lite.wsgi:application``.

Configuration is found as for the reference service (see ``conf.load``).
"""

import ctypes
import ctypes.util

from placement_lite import app
from placement_lite import conf as config
from placement_lite import drain
from placement_lite import requestlog
from placement_lite import worker_death

#: glibc's mallopt parameters.
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
_LARGE_BLOCK = 128 * 1024


def _return_large_blocks_to_the_system():
    """Give each large block (a listing's text, a large answer's JSON) its
    own mapping, unmapped when freed. glibc's default raises its threshold
    after the first large block is freed and serves later ones from the
    heap, which it rarely shrinks: every worker would keep the peak of its
    largest request. Fixing the thresholds turns that off. (Not glibc: no
    such behaviour, nothing to do.)"""
    libc = ctypes.CDLL(ctypes.util.find_library('c'))
    mallopt = getattr(libc, 'mallopt', None)
    if mallopt is not None:
        mallopt(_M_MMAP_THRESHOLD, _LARGE_BLOCK)
        mallopt(_M_TRIM_THRESHOLD, _LARGE_BLOCK)


def _return_what_start_up_freed():
    """Hand back to the system what building the application freed (the
    rows read to make the cloud kept, at tens of thousands of hosts a
    hundred megabytes): a server that forks its workers afterwards would
    give each a share of it, counted in every worker."""
    libc = ctypes.CDLL(ctypes.util.find_library('c'))
    malloc_trim = getattr(libc, 'malloc_trim', None)
    if malloc_trim is not None:
        malloc_trim(0)


_return_large_blocks_to_the_system()

conf = config.load()
requestlog.setup(conf)
application = worker_death.ResetIfTheWorkerDies(app.build_app(conf))
app.tune_garbage_collector()
_return_what_start_up_freed()
drain.install_under_uwsgi(conf.api.drain_grace_period, conf.api.drain_timeout)
