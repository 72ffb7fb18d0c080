"""What the engine, the database code and the domain report about their
work as they do it, for whoever watches: ``placement_lite.metrics`` when
``[metrics] enabled``, nobody otherwise.

They call ``observe.watcher.<report>(...)``; the default Watcher does
nothing, so a report costs one call. This module imports nothing, so the
engine and the database stay free of prometheus and HTTP.
"""

#: How a whole-cloud read was served (see db.cloud.reads.read_whole).
CLOUD_AS_IS = 'as_is'
CLOUD_PATCHED = 'patched'
CLOUD_READ_WHOLE = 'read_whole'


class Watcher:
    """The reports; each does nothing here."""

    def cloud_read(self, how):
        """The whole cloud was read: the last read served as it was
        (CLOUD_AS_IS), was patched (CLOUD_PATCHED), or there was none and
        every provider was placed (CLOUD_READ_WHOLE)."""

    def stocks(self, kept, read):
        """Of the providers placed, ``kept`` had their stock kept, ``read``
        had it read from the database."""

    def window_searched(self):
        """A candidates search searched one window of trees."""

    def allocation_write_retried(self):
        """An allocation write met a concurrent change and starts again in
        a new transaction."""

    def write_waited_for_rows(self):
        """A write found rows it locks held by another transaction: it was
        rolled back, waited for them and starts again (db.locks)."""


watcher = Watcher()


def watch(new_watcher):
    """Send every report to ``new_watcher`` from now on, in this process."""
    global watcher
    watcher = new_watcher
