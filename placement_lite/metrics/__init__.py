"""Prometheus metrics at ``/metrics`` (``[metrics] enabled``): what every
request, candidates search, claim and database statement did, what the
per-process caches served, and the cloud's capacity per resource class.
docs/operations.md lists each metric and its buckets.

``/metrics`` is answered before authentication (a Prometheus server has
no keystone token) and only to the addresses of ``[metrics]
allowed_networks``: off unless asked for, and restricted when on.

Under a server with several worker processes (uwsgi), each process
writes its counts to files in ``[metrics] multiprocess_dir`` (or
``$PROMETHEUS_MULTIPROC_DIR``) and a scrape adds them all up
(prometheus_client's multiprocess mode): counts of a worker that died or
was recycled stay, so no counter goes backwards. prometheus_client picks
that mode when it is first imported, from the environment; so this
module, which the rest of the application imports, does not import it:
``wrap`` prepares the directory first, then imports ``collect``.
"""

import fcntl
import glob
import os

#: Where the allocation candidates handler leaves the explain.Explanation
#: of a request with explain (for the step that emptied an answer).
EXPLANATION = 'placement_lite.explanation'
#: Where the error renderer leaves the error code of an error answer.
ERROR_CODE = 'placement_lite.error_code'
#: prometheus_client's variable naming the multiprocess directory.
MULTIPROC_ENV = 'PROMETHEUS_MULTIPROC_DIR'
#: The file in the directory naming the server master that owns it.
_OWNER_FILE = 'owner.pid'


def wrap(application, conf, db, routes):
    """``application`` counted, and ``/metrics`` served, when ``[metrics]
    enabled``; ``application`` as it is otherwise. ``routes`` are the
    (path template, resource class) pairs served: requests are counted by
    template, never by their raw path."""
    if not conf.metrics.enabled:
        return application
    directory = _multiprocess_directory(conf)
    # Imported only now: prometheus_client reads the environment set above
    # when it is first imported.
    from placement_lite.metrics import collect
    return collect.Middleware(application, collect.Metrics(directory, db),
                              routes, conf.metrics.allowed_networks)


def _multiprocess_directory(conf):
    """The multiprocess directory ($PROMETHEUS_MULTIPROC_DIR, else
    ``[metrics] multiprocess_dir``), made ready for this process and set
    in the environment; None when neither names one."""
    directory = os.environ.get(MULTIPROC_ENV) or conf.metrics.multiprocess_dir
    if not directory:
        return None
    os.makedirs(directory, exist_ok=True)
    os.environ[MULTIPROC_ENV] = directory
    _empty_for_a_new_master(directory, _master_pid())
    return directory


def _master_pid():
    """The pid of the uwsgi master serving this process, or this process's
    own when it is not under uwsgi."""
    try:
        import uwsgi
    except ImportError:
        return os.getpid()
    return uwsgi.masterpid()


def _empty_for_a_new_master(directory, master_pid):
    """Empty ``directory`` of the counts a previous server left, once per
    master: the first process to build the application under a new master
    (the master itself, or with ``lazy-apps`` the first worker) removes
    them and records the master; the others, and workers respawned later,
    find it recorded and keep every count."""
    with open(os.path.join(directory, _OWNER_FILE), 'a+') as owner:
        fcntl.flock(owner, fcntl.LOCK_EX)
        owner.seek(0)
        if owner.read().strip() == str(master_pid):
            return
        for path in glob.glob(os.path.join(directory, '*.db')):
            os.remove(path)
        owner.seek(0)
        owner.truncate()
        owner.write(str(master_pid))
