"""API hosts restarted one at a time under load, as operators restart them
at every upgrade, and what the clients saw.

A :class:`Fleet` is two API hosts (``etc/uwsgi.ini``, 2 processes each,
pre-forked or ``lazy-apps``) on one database behind a front: nginx
(``etc/nginx-placement.conf``, the hosts on ``behind-nginx``) or HAProxy
(``etc/haproxy-placement.cfg``, the hosts on uwsgi's router). :func:`load`
is twelve clients at microversion 1.39, each keeping its connection open
between requests as nova's do: six claim, move and release resources
(``PUT /allocations``, ``POST /allocations``, ``DELETE``), four read
(candidates, usages, the provider listing), two create providers and give
them inventories.

:meth:`Fleet.roll` restarts each host in turn, waiting until the host
restarted answers again before it stops the next (:data:`WAYS`):

- ``sigterm``: SIGTERM to the host's uwsgi master, nothing else, and once
  it has exited the same line started again (a rolling restart by a
  service manager or an orchestrator);
- ``sigterm-every-process``: the same, but SIGTERM to the master and
  every process it started at once, as systemd stops a unit by default
  (``KillMode=control-group``);
- ``sighup``: a graceful reload, SIGHUP to the master (``systemctl
  reload``), which drains its workers and starts new ones;
- ``drain``: the front told first, as docs/deploying.md says (nginx: the
  host's ``server`` line marked ``down``, ``nginx -s reload`` and SIGTERM
  at once; HAProxy: ``state drain`` through its admin socket, SIGTERM
  once no connection to the host is left), the host put back once it
  answers (nginx: a reload).

:meth:`Fleet.upgrade` does the same to a fleet of another release's hosts,
each replaced by one of this tree's on the same port.

Every request counts by outcome (:func:`outcome_of`), and every write is
checked in the database whatever its answer (:func:`database_problems`).

tests/test_rolling_restart.py runs these in the suite; ``python -m
tests.bench.rolling_restart`` runs them beside the reference.
"""

import collections
import os
import time
import uuid

from placement_lite import drain
from placement_lite.db import lookups
from placement_lite.db import tables
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
WAYS = ('sigterm', 'sigterm-every-process', 'sighup', 'drain')

#: What the clients saw: every Answer, the threads that sent them, and how
#: many requests they sent again after their kept connection was found
#: closed (servers.KeptConnection).
Outcome = collections.namedtuple('Outcome', 'answers writers makers resent')

#: What a request's answer counts as; the last three are failures.
OUTCOMES = ('2xx', '409 by design', 'other 4xx', '5xx', 'no answer')
FAILURES = OUTCOMES[2:]

def outcome_of(answer):
    """One of OUTCOMES: a 409 counts as by design when the load provokes
    it (claims.conflict_by_design), any other answer under 500 that is
    not a 2xx as another 4xx."""
    if answer.status is None:
        return 'no answer'
    if 200 <= answer.status < 300:
        return '2xx'
    if claims.conflict_by_design(answer):
        return '409 by design'
    return 'other 4xx' if answer.status < 500 else '5xx'


def failed(answers):
    """The answers that are failures."""
    return [answer for answer in answers if outcome_of(answer) in FAILURES]


def summary(outcome):
    """{'requests': n, 'failed': n, each of OUTCOMES: n, 'resent': n,
    'failures': {what failed: n}}: a failure told by its operation and
    status and error code, or what became of a request without an
    answer."""
    counted = collections.Counter(map(outcome_of, outcome.answers))
    failures = collections.Counter(
        '%s %s %s' % (answer.operation, answer.status or 'none',
                      (answer.error or {}).get('code') if answer.status
                      else (answer.error or {}).get('detail', '')[:60])
        for answer in failed(outcome.answers))
    return dict(requests=len(outcome.answers),
                failed=sum(counted[name] for name in FAILURES),
                **{name: counted[name] for name in OUTCOMES},
                resent=outcome.resent, failures=dict(sorted(failures.items())))


#: The line of etc/nginx-placement.conf that sends a request a host failed
#: to another host, and the one that passes answers on unbuffered.
NGINX_RESENDING = 'uwsgi_next_upstream error timeout non_idempotent;'
NGINX_UNBUFFERED = 'uwsgi_buffering off;'
#: Copies of etc/nginx-placement.conf with one of those lines changed, by
#: name: (the shipped line, the copy's).
NGINX_VARIANTS = {
    # Sending no request to another host.
    'no-resending': (NGINX_RESENDING, 'uwsgi_next_upstream off;'),
    # nginx's default: sending to another host the requests it could not
    # send (a refused connection) and the idempotent ones a host failed,
    # not a POST it had sent.
    'idempotent': (NGINX_RESENDING, 'uwsgi_next_upstream error timeout;'),
    # Buffering the hosts' answers, as shipped before.
    'buffered': (NGINX_UNBUFFERED, 'uwsgi_buffering on;'),
}


def nginx_variant(directory, which):
    """The copy of etc/nginx-placement.conf NGINX_VARIANTS[which] says,
    written in ``directory``: its path."""
    shipped_line, line = NGINX_VARIANTS[which]
    with open(servers.NGINX_CONF) as handle:
        shipped = handle.read()
    assert shipped_line in shipped
    path = os.path.join(directory, 'nginx-placement-%s.conf' % which)
    with open(path, 'w') as handle:
        handle.write(shipped.replace(shipped_line, line))
    return path


class Fleet:
    """:data:`HOSTS` API hosts behind ``front`` on ``db_url``, serving
    ``tree``'s code (this checkout's, or another release's)."""

    def __init__(self, db_url, front, tree=servers.REPO, extra_conf='',
                 settings=None, check_path=None,
                 nginx_source=servers.NGINX_CONF, lazy=False):
        """``settings``: options of etc/uwsgi.ini changed
        (servers.ini_with); ``check_path``: what HAProxy's checks ask
        for, in place of the shipped path; ``nginx_source``: nginx's file,
        in place of the shipped one; ``lazy``: the hosts on the
        ``lazy-apps`` line."""
        self.db_url = db_url
        self.front_name = front
        self.extra_conf = extra_conf
        self.settings = settings
        self.lazy = lazy
        self.hosts = []
        #: Hosts an upgrade replaced, stopped: their logs are checked too.
        self.retired = []
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
            processes=PROCESSES, lazy=self.lazy, tree=tree, port=port,
            extra_conf=self.extra_conf, settings=self.settings,
            drain_grace_period=None)

    @property
    def port(self):
        """The port clients send to: the front's."""
        return self.front.port

    def roll(self, how, rounds=1):
        """Restart every host in turn, ``rounds`` times, ``how`` (one of
        :data:`WAYS`)."""
        for _round in range(rounds):
            for index, host in enumerate(self.hosts):
                self._take_out(index, how)
                if how == 'sighup':
                    host.reload()
                else:
                    host.stop(every_process=how == 'sigterm-every-process')
                    host.start()
                self._put_back(index, how)

    def upgrade(self, how='sigterm', tree=servers.REPO):
        """Replace every host in turn by one serving ``tree`` on its port."""
        for index, old in enumerate(self.hosts):
            self._take_out(index, how)
            old.stop()
            self.retired.append(old)
            self.hosts[index] = self._host(tree, port=old.port)
            self._put_back(index, how)

    def reload_nginx(self, times, every=1.0):
        """``nginx -s reload`` ``times`` times, ``every`` seconds, nothing
        changed in the file."""
        for _time in range(times):
            self._reload_nginx(down=None)
            time.sleep(every)

    def _take_out(self, index, how):
        if how != 'drain':
            return
        if self.front_name == 'nginx':
            # SIGTERM follows at once: the host serves, during its grace
            # period, what nginx's old workers still send it.
            self._reload_nginx(down=index)
            return
        self.front.admin('set server placement/%s state drain'
                         % self.front.names[index])
        port = self.hosts[index].workers_port()
        if not harness.wait_for(lambda: not drain.connections_to({port}),
                                timeout=60):
            raise RuntimeError('host %d still has connections' % index)
        self.front.admin('set server placement/%s state maint'
                         % self.front.names[index])

    def _put_back(self, index, how):
        if how != 'drain':
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

    def problems_in_logs(self):
        """What every host's log (those an upgrade replaced included) and
        nginx's tell of errors."""
        problems = [line for host in self.retired + self.hosts
                    for line in host.problems_in_log()]
        if self.front_name == 'nginx':
            problems.extend(self.front.problems_in_log())
        return problems

    def close(self):
        if self.front is not None:
            self.front.stop()
        for host in self.retired + self.hosts:
            host.cleanup()


def add_providers(db, count, prefix='listed'):
    """``count`` providers without inventories written straight into
    ``db``, in one transaction, before the hosts start: a provider
    listing of about 0.8 KB per provider."""
    providers = tables.resource_providers
    with db.writer() as conn:
        conn.execute(providers.insert(), [
            {'uuid': str(provider), 'name': '%s-%s' % (prefix, provider),
             'generation': 0, 'created_at': lookups.utcnow()}
            for provider in (uuid.uuid4() for _ in range(count))])
        conn.execute(providers.update()
                     .where(providers.c.root_provider_id.is_(None))
                     .values(root_provider_id=providers.c.id))


def load(port, providers, deadline):
    """The clients, not yet started, sending until ``deadline``, each
    keeping its connection open: (writers, readers, makers)."""
    writers, readers = claims.mixed_load(
        port, providers, deadline - time.monotonic(), writers=WRITERS,
        readers=READERS, version=VERSION, keep_alive=True)
    makers = [claims.ProviderMaker(port, deadline, version=VERSION,
                                   keep_alive=True)
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
    return Outcome(claims.answers(threads), writers, makers,
                   sum(thread.resent for thread in threads))


def database_problems(db, outcome):
    """What the database shows of the load's writes that their answers
    did not say (claims.write_problems, claims.provider_problems)."""
    return (claims.write_problems(claims.allocations_in_database(db),
                                  outcome.writers)
            + claims.provider_problems(claims.providers_in_database(db),
                                       claims.inventories_in_database(db),
                                       outcome.makers))
