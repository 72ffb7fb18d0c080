"""What a served process hands back to the system of the memory its
requests and its start-up freed (glibc's malloc; elsewhere nothing to
do).

A large request (every candidate of a cloud, the provider listing) makes
millions of small objects and frees them when it ends, but the heap they
came from keeps its pages: freed chunks lie between live ones, and glibc
returns only what is free at the top. A worker would keep the peak of its
largest request for good, counted once per worker. So:

- large blocks (a listing's text, a large answer's JSON) get a mapping of
  their own, unmapped when freed (``mallopt``: glibc's default raises the
  threshold after the first large block is freed, and serves later ones
  from the heap);
- after a request that left the process ``GROWN_BY`` larger than after the
  last trim, ``malloc_trim(0)`` hands back every free page of the heap
  (at 5,000 hosts 75 MB after every candidate of one flavor, in 5 to 15
  ms); smaller requests cost a read of the process's size;
- the process that builds the application hands back what start-up freed
  (the rows read to fill what it keeps) before a server forks its
  workers from it.
"""

import ctypes
import ctypes.util
import os

from placement_lite import closing

#: glibc's mallopt parameters.
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
_LARGE_BLOCK = 128 * 1024
#: Growth of the resident size, in pages, past which a request's end
#: trims the heap.
GROWN_BY = 16 * 1024 * 1024 // os.sysconf('SC_PAGE_SIZE')


def _libc():
    return ctypes.CDLL(ctypes.util.find_library('c'))


def return_large_blocks():
    """Give each large block its own mapping, unmapped when freed."""
    mallopt = getattr(_libc(), 'mallopt', None)
    if mallopt is not None:
        mallopt(_M_MMAP_THRESHOLD, _LARGE_BLOCK)
        mallopt(_M_TRIM_THRESHOLD, _LARGE_BLOCK)


def trim():
    """Hand back every free page of the heap."""
    malloc_trim = getattr(_libc(), 'malloc_trim', None)
    if malloc_trim is not None:
        malloc_trim(0)


class TrimAfterGrowth:
    """WSGI middleware: once the answer is written, trim the heap if the
    process grew by GROWN_BY pages since it last did."""

    def __init__(self, application):
        self.application = application
        self._trim = getattr(_libc(), 'malloc_trim', None)
        #: (pid, file descriptor of /proc/self/statm, pages resident after
        #: the last trim): opened in each process (a worker forked from a
        #: master that opened it would read the master's).
        self._mine = None

    def __call__(self, environ, start_response):
        answer = self.application(environ, start_response)
        if self._trim is None:
            return answer
        return closing.Answer(answer, self.trim_if_grown)

    def trim_if_grown(self):
        pid = os.getpid()
        if self._mine is None or self._mine[0] != pid:
            self._mine = (pid, os.open('/proc/self/statm', os.O_RDONLY),
                          None)
        pid, statm, after_trim = self._mine
        resident = int(os.pread(statm, 64, 0).split()[1])
        if after_trim is None:
            after_trim = resident
        elif resident > after_trim + GROWN_BY:
            self._trim(0)
            after_trim = int(os.pread(statm, 64, 0).split()[1])
        self._mine = (pid, statm, min(after_trim, resident))
