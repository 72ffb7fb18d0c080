"""WSGI entry point for uwsgi and other servers: ``placement_lite.wsgi:application``.

Configuration is found as for the reference service (see ``conf.load``).
"""

from placement_lite import app
from placement_lite import conf as config
from placement_lite import drain
from placement_lite import heap
from placement_lite import requestlog
from placement_lite import worker_death

heap.return_large_blocks()

conf = config.load()
requestlog.setup(conf)
application = heap.TrimAfterGrowth(worker_death.ResetIfTheWorkerDies(
    app.build_app(conf)))
app.tune_garbage_collector()
heap.trim()
drain.install_under_uwsgi(conf.api.drain_grace_period, conf.api.drain_timeout)
