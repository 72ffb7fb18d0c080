"""API hosts restarted one at a time under load, as operators restart them
at every upgrade, and what the clients saw.

A :class:`Fleet` is two API hosts (``etc/uwsgi.ini``, 2 processes each) on
one database behind a front: nginx (``etc/nginx-placement.conf``, the hosts
on ``behind-nginx``) or HAProxy (``etc/haproxy-placement.cfg``, the hosts
on uwsgi's router). :func:`load` is twelve clients at microversion 1.39:
six claim, move and release resources (``PUT /allocations``, ``POST
/allocations``, ``DELETE``), four read (candidates, usages, the provider
listing), two create providers and give them inventories.

:meth:`Fleet.roll` restarts each host in turn, waiting until the host
restarted answers again before it stops the next:

- ``sigterm``: SIGTERM to the host's uwsgi, nothing else, and once it has
  exited the same line started again (a rolling restart by a service
  manager or an orchestrator);
- ``drain``: the front told first (nginx: the host's ``server`` line
  marked ``down`` and a reload; HAProxy: ``state drain`` through its admin
  socket), SIGTERM once no connection to the host is left, the host put
  back once it answers.

:meth:`Fleet.upgrade` does the same to a fleet of another release's hosts,
each replaced by one of this tree's on the same port.

tests/test_rolling_restart.py runs these in the suite; ``python -m
tests.bench.rolling_restart`` runs them beside the reference.
"""

import collections
import time

from placement_lite import drain
from tests import claims
from tests import harness
from tests import servers

VERSION = '1.39'
WRITERS, READERS, MAKERS = 6, 4, 2
PROCESSES = 2
HOSTS = 2
#: The uwsgi section of each front's hosts.
SECTIONS = {'nginx': 'behind-nginx', 'haproxy': 'uwsgi'}
#: How long the load runs before the first restart and after the last.
SETTLE = 2.0

#: What the clients saw: every Answer, and the threads that sent them.
Outcome = collections.namedtuple('Outcome', 'answers writers makers')


def failed(answers):
    """The answers that are failures: none came, or a 5xx."""
    return [answer for answer in answers
            if answer.status is None or answer.status >= 500]


def summary(answers):
    """{'requests': n, 'failed': n, status: n...}, statuses as text (none
    for no answer)."""
    counted = collections.Counter(
        'none' if answer.status is None else str(answer.status)
        for answer in answers)
    return dict(requests=len(answers), failed=len(failed(answers)),
                **dict(sorted(counted.items())))


class Fleet:
    """:data:`HOSTS` API hosts behind ``front`` on ``db_url``, serving
    ``tree``'s code (this checkout's, or another release's)."""

    def __init__(self, db_url, front, tree=servers.REPO, extra_conf='',
                 settings=None, check_path=None,
                 nginx_source=servers.NGINX_CONF):
        """``settings``: options of etc/uwsgi.ini changed
        (servers.ini_with); ``check_path``: what HAProxy's checks ask
        for, in place of the shipped path; ``nginx_source``: nginx's file,
        in place of the shipped one."""
        self.db_url = db_url
        self.front_name = front
        self.extra_conf = extra_conf
        self.settings = settings
        self.hosts = []
        self.front = None
        try:
            for _host in range(HOSTS):
                self.hosts.append(self._host(tree))
            ports = [host.port for host in self.hosts]
            self.front = (servers.Nginx(ports, source=nginx_source)
                          if front == 'nginx' else servers.HAProxyFront(
                              {'api%d' % index: port
                               for index, port in enumerate(ports, 1)},
                              check_path))
        except BaseException:
            self.close()
            raise

    def _host(self, tree, port=None):
        return servers.Uwsgi(
            self.db_url, section=SECTIONS[self.front_name],
            processes=PROCESSES, tree=tree, port=port,
            extra_conf=self.extra_conf, settings=self.settings,
            drain_grace_period=None)

    @property
    def port(self):
        """The port clients send to: the front's."""
        return self.front.port

    def roll(self, how, rounds=1):
        """Restart every host in turn, ``rounds`` times, ``how``
        (``sigterm`` or ``drain``)."""
        for _round in range(rounds):
            for index in range(HOSTS):
                self._take_out(index, how)
                self.hosts[index].stop()
                self.hosts[index].start()
                self._put_back(index, how)

    def upgrade(self, how='sigterm', tree=servers.REPO):
        """Replace every host in turn by one serving ``tree`` on its port."""
        for index, old in enumerate(self.hosts):
            self._take_out(index, how)
            old.cleanup()
            self.hosts[index] = self._host(tree, port=old.port)
            self._put_back(index, how)

    def _take_out(self, index, how):
        if how == 'sigterm':
            return
        if self.front_name == 'nginx':
            self._reload_nginx(down=index)
        else:
            self.front.admin('set server placement/%s state drain'
                             % self.front.names[index])
        port = self.hosts[index].workers_port()
        if not harness.wait_for(lambda: not drain.connections_to({port}),
                                timeout=60):
            raise RuntimeError('host %d still has connections' % index)
        if self.front_name == 'haproxy':
            self.front.admin('set server placement/%s state maint'
                             % self.front.names[index])

    def _put_back(self, index, how):
        if how == 'sigterm':
            return
        if self.front_name == 'nginx':
            self._reload_nginx(down=None)
            return
        name = self.front.names[index]
        self.front.admin('set server placement/%s state ready' % name)
        # Back once its check passed, as `show stat` shows.
        if not harness.wait_for(
                lambda: self.front.servers()[name]['status'] == 'UP',
                timeout=60):
            raise RuntimeError('%s not back up' % name)

    def _reload_nginx(self, down):
        """The upstream block with each host's shipped line, the host
        ``down`` (an index, or None) marked down; then a reload."""
        self.front.reload(servers.upstream_for(
            self.front.shipped, [host.port for host in self.hosts], down))
        # The new workers take connections once they have read the file.
        time.sleep(1.0)

    def problems_in_logs(self):
        return [line for host in self.hosts
                for line in host.problems_in_log()]

    def close(self):
        if self.front is not None:
            self.front.stop()
        for host in self.hosts:
            host.cleanup()


def load(port, providers, deadline):
    """The clients, not yet started, sending until ``deadline``: (writers,
    readers, makers)."""
    writers, readers = claims.mixed_load(
        port, providers, deadline - time.monotonic(), writers=WRITERS,
        readers=READERS, version=VERSION)
    makers = [claims.ProviderMaker(port, deadline, version=VERSION)
              for _ in range(MAKERS)]
    return writers, readers, makers


def under_load(fleet, action):
    """Run ``action()`` while :func:`load` runs through the fleet's front,
    from :data:`SETTLE` seconds before it to SETTLE seconds after; the
    Outcome."""
    providers = claims.create_providers(fleet.port, count=4, prefix='rolled')
    writers, readers, makers = load(fleet.port, providers,
                                    time.monotonic() + 3600)
    threads = writers + readers + makers
    claims.start(threads)
    try:
        time.sleep(SETTLE)
        action()
        time.sleep(SETTLE)
    finally:
        for thread in threads:
            thread.deadline = 0
        claims.finish(threads, 120)
    return Outcome(claims.answers(threads), writers, makers)


def assert_nothing_lost(db, outcome):
    """Every acknowledged write is in the database, nothing half-applied,
    nothing over-committed."""
    claims.assert_whole(db, outcome.writers)
    claims.assert_providers_made(db, outcome.makers)
