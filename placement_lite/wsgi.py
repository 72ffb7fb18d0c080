"""WSGI entry point for uwsgi and other servers: ``placement_lite.wsgi:application``.

Configuration is found as for the reference service (see ``conf.load``).
"""

import ctypes
import ctypes.util
import gc

from placement_lite import app
from placement_lite import conf as config
from placement_lite import requestlog

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


_return_large_blocks_to_the_system()

conf = config.load()
requestlog.setup(conf)
application = app.build_app(conf)
# What was built at start-up lives as long as the process: moving it out of
# the collector's sight keeps full collections from walking it again and
# again.
gc.freeze()
# A large candidates answer builds a few hundred thousand small containers,
# nearly all alive until the response is written, and nearly none in a
# reference cycle. With the default thresholds (700, 10, 10) the collector
# walks them over and over while the request runs, about a fifth of its
# time; collecting every 100,000 allocations finds the same garbage.
gc.set_threshold(100_000, 20, 20)
