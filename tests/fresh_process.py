"""A process with a history against a fresh one: the same read, answered
by both, byte for byte (tests/test_fresh_process.py).

A placement process keeps what it read between requests (db/cloud: the
store, what is derived from it, tree orders, summaries, each tree's
first candidates, window rates, dispersion turns, holder counts), so an
answer could come to depend on what the process was asked before. A
:class:`History` is one long-lived process (an application on its own
engines, as a worker has) that builds a world from
tests/differential/world.py and then answers a random sequence mixing
microversions (1.10 to the newest), every parameter of a candidates
request (limit, group_policy, in_tree, member_of, same_subtree,
root_required; from 1.40 device profiles, explain, root_member_of,
isolate:, rank_by, preferred, alternatives), the reads of the other
routes, and writes by itself, by another process and straight into the
database as another service writes it. Every read it answers is
answered again by a process started for it alone, on the same database
at the same moment, and the two answers are compared.

Dispersion (``[placement] allocation_candidates_dispersion``) makes an
answer depend on how many requests of its shape the process answered
before, by design: the fresh process is brought to the same turn first
(:func:`same_turn`).
"""

import dataclasses
import json
import random
import re
import uuid

import sqlalchemy as sa

from placement_lite.db import cloud
from placement_lite.db import tables
from tests import harness
from tests.differential import traffic
from tests.differential import world as worlds

#: Headers whose values name the moment or the request, not the answer.
UNCOMPARED_HEADERS = frozenset({'x-openstack-request-id', 'last-modified',
                                'openstack-request-id', 'date'})
#: The newest microversion with extensions on, and without.
NEWEST = {True: 43, False: 39}
_PLACEHOLDER = re.compile(rb'"@(c?gen):([0-9a-f-]+)@"')
#: The request id an error body names.
_REQUEST_ID = re.compile(rb'"request_id": "req-[0-9a-f-]+"')


@dataclasses.dataclass
class Mismatch:
    """A read the two processes answered differently."""

    index: int
    method: str
    path: str
    version: str
    history: tuple
    fresh: tuple

    def __str__(self):
        return ('#%d %s %s at %s\n  long-lived: %s\n  fresh:      %s'
                % (self.index, self.method, self.path, self.version,
                   _short(self.history), _short(self.fresh)))


def _short(answer):
    status, body, _headers = answer
    return '%s %s' % (status, body[:600].decode('utf-8', 'replace'))


class History:
    """One long-lived process on ``backend`` under ``options`` ([group]
    option: value), another process writing the same database, and the
    sequence of requests they are sent (seeded by ``seed``). The world is
    tests.differential's world of ``seed`` and a few compute hosts with
    NUMA nodes (_add_hosts), or with ``hosts_only`` those hosts alone (no
    sharing provider then holds a class of the server's order, and its
    requests walk the trees in the order of what they keep free)."""

    def __init__(self, backend, seed, options, hosts_only=False):
        self.backend = backend
        self.options = dict(options)
        self.extensions = options.get('api.enable_extensions', True)
        self.rng = random.Random(seed * 104729 + 7)
        self.world = worlds.generate(seed)
        self.lived = harness.Environment(backend, **self.options)
        self.url = self.lived.db.engine.url.render_as_string(
            hide_password=False)
        self.other = harness.Environment(backend, database_url=self.url,
                                         **self.options)
        self.generator = traffic.Generator(self.world, seed)
        self.candidates_sent = []
        self.profiles = []
        self.mismatches = []
        self.reads = 0
        if hosts_only:
            self.world.trees, self.world.sharing = [], []
            self.world.consumers = []
            self.generator = traffic.Generator(self.world, seed)
        for method, path, body in worlds.build(self.world):
            self._send(self.lived, method, path, body, worlds.BUILD_VERSION)
        self._add_hosts()
        if self.extensions:
            self._make_profiles()

    def close(self):
        self.other.close()
        self.lived.close()

    # -- sending -------------------------------------------------------

    def _send(self, env, method, path, body, version, headers=None):
        """(status, headers, body bytes) of one request to ``env``."""
        if isinstance(body, bytes):
            body = _PLACEHOLDER.sub(self._resolved, body) or None
        return env.respond(method, path, body, version=version,
                           headers=headers)

    def _resolved(self, match):
        """A generation placeholder of tests.differential.traffic, as the
        database holds it now."""
        kind, uuid_ = match.group(1).decode(), match.group(2).decode()
        if kind == 'gen':
            status, _h, answer = self.lived.request(
                'GET', '/resource_providers/' + uuid_, version='1.14')
            return str(answer['generation'] if status == 200 else 0).encode()
        status, _h, answer = self.lived.request(
            'GET', '/allocations/' + uuid_, version='1.28')
        return json.dumps(answer.get('consumer_generation')
                          if status == 200 else None).encode()

    def _add_hosts(self):
        """Compute hosts with NUMA nodes, beside the world's trees: some
        keep VCPU and MEMORY_MB on the root and on a node, some VCPU on
        the root and both on their nodes (before 1.29 a candidate takes
        everything from one provider of a tree, from 1.29 from any)."""
        for number in range(self.rng.randint(3, 6)):
            root = str(uuid.UUID(int=self.rng.getrandbits(128), version=4))
            on_root = {'VCPU': {'total': self.rng.choice([4, 8])}}
            if self.rng.random() < 0.5:
                on_root['MEMORY_MB'] = {'total': self.rng.choice(
                    [2048, 8192])}
            self._provider(root, 'host-%d' % number, None, on_root)
            for node in range(self.rng.randint(1, 2)):
                self._provider(
                    str(uuid.UUID(int=self.rng.getrandbits(128), version=4)),
                    'host-%d-numa%d' % (number, node), root,
                    {'VCPU': {'total': self.rng.choice([2, 4])},
                     'MEMORY_MB': {'total': self.rng.choice(
                         [4096, 16384])}})

    def _provider(self, provider, name, parent, inventories):
        body = {'name': name, 'uuid': provider}
        if parent:
            body['parent_provider_uuid'] = parent
        status, _h, _b = self._send(self.lived, 'POST',
                                    '/resource_providers', body, '1.14')
        assert status in (200, 201)
        status, _h, _b = self._send(
            self.lived, 'PUT', '/resource_providers/%s/inventories'
            % provider, {'resource_provider_generation': 0,
                         'inventories': inventories}, '1.14')
        assert status == 200
        self.generator.providers.append(provider)

    def _make_profiles(self):
        classes = sorted({name for tree in self.world.trees
                          for provider in tree
                          for name in provider.inventories}
                         | {'VCPU', 'MEMORY_MB'})
        for number in range(2):
            groups = [{'resources:%s' % self.rng.choice(classes): '1'}
                      for _ in range(self.rng.randint(1, 2))]
            name = 'profile-%d' % number
            status, _h, _b = self._send(
                self.lived, 'POST', '/device_profiles',
                {'name': name, 'groups': groups}, '1.40')
            assert status == 201
            self.profiles.append(name)

    # -- the sequence --------------------------------------------------

    def run(self, count):
        """Send ``count`` requests; the Mismatches found."""
        for index in range(count):
            roll = self.rng.random()
            if roll < 0.25:
                self.read(index, *self.candidates())
            elif roll < 0.40:
                self.read(index, *self.flavor())
            elif roll < 0.60 and self.candidates_sent:
                self.read(index, *self.again())
            elif roll < 0.70:
                self.read(index, *self.other_read())
            elif roll < 0.85:
                self.write(self.lived)
            elif roll < 0.95:
                self.write(self.other)
            else:
                self.write_as_another_service()
        return self.mismatches

    def candidates(self):
        """(path, version) of a new candidates request."""
        _method, path, version, _body = traffic.allocation_candidates(
            self.generator)
        minor = traffic._minor(version)
        if self.extensions and self.rng.random() < 0.5:
            minor = self.rng.randint(max(minor, 40), NEWEST[True])
            path = self._extended(path, minor)
            version = '1.%d' % minor
        self.candidates_sent.append(path)
        return path, version

    def flavor(self):
        """(path, version) of a request as nova sends it, for one flavor,
        at any microversion: from 1.42 sometimes ranked by the key an
        operator sets as the server's order."""
        rng = self.rng
        resources = 'VCPU:%d,MEMORY_MB:%d' % (rng.choice([1, 2]),
                                             rng.choice([256, 1024]))
        if rng.random() < 0.5:
            resources += ',DISK_GB:%d' % rng.choice([1, 10])
        params = ['resources=' + resources]
        minor = rng.randint(10, NEWEST[self.extensions])
        if minor >= 16 and rng.random() < 0.8:
            params.append('limit=%d' % rng.choice([1, 3, 50]))
        if minor >= 42 and rng.random() < 0.5:
            params.append('rank_by=spread:MEMORY_MB,VCPU')
        path = '/allocation_candidates?' + '&'.join(params)
        self.candidates_sent.append(path)
        return path, '1.%d' % minor

    def again(self):
        """(path, version) of a candidates request sent before, at another
        microversion, with another limit, or as it was."""
        path = self.rng.choice(self.candidates_sent)
        path = re.sub(r'&?limit=\d+', '', path)
        if self.rng.random() < 0.3:
            path = re.sub(r'&?(rank_by|preferred\w*|alternatives|explain|'
                          r'root_member_of)=[^&]*', '', path)
        path = path.replace('?&', '?')
        if self.rng.random() < 0.7:
            path += '&limit=%d' % self.rng.choice([1, 2, 3, 5, 50])
        lowest = 10
        for name, since in (('in_tree', 31), ('same_subtree', 36),
                            ('root_required', 35), ('member_of', 21),
                            ('required', 17), ('limit', 16),
                            ('group_policy', 25), ('resources_', 33),
                            ('resources1', 25), ('resources2', 25),
                            ('resources3', 25), ('in:', 39), ('!', 22),
                            ('device_profile', 40), ('explain', 41),
                            ('root_member_of', 41), ('isolate:', 41),
                            ('rank_by', 42), ('preferred', 42),
                            ('alternatives', 42)):
            if name in path:
                lowest = max(lowest, since)
        newest = NEWEST[self.extensions]
        if 'resources=' not in path and lowest < 36:
            lowest = 25
        return path, '1.%d' % self.rng.randint(min(lowest, newest), newest)

    def _extended(self, path, minor):
        """``path`` with some of the parameters of 1.40 to ``minor``."""
        rng = self.rng
        params = path.split('?', 1)[1].split('&')
        suffixes = sorted({match for param in params for match in
                           re.findall(r'^resources(\w+)=', param)})
        if minor >= 40 and self.profiles and rng.random() < 0.2:
            params.append('device_profile=' + rng.choice(self.profiles))
            if not any(p.startswith('group_policy') for p in params):
                params.append('group_policy=none')
        if minor >= 41 and rng.random() < 0.15:
            params.append('explain=true')
        if minor >= 41 and rng.random() < 0.1:
            params.append('root_member_of=' + self.generator.aggregate())
        if minor >= 41 and len(suffixes) > 1 and rng.random() < 0.2:
            params = [p for p in params if not p.startswith('group_policy')]
            params.append('group_policy=isolate:%s,%s' % tuple(suffixes[:2]))
        if minor >= 42 and rng.random() < 0.6:
            terms = rng.sample(['spread:MEMORY_MB', 'pack:VCPU',
                                'spread:DISK_GB', 'VCPU'],
                               rng.randint(1, 2))
            if terms[0] == 'VCPU':
                terms[0] = 'spread:VCPU'
            params.append('rank_by=' + ','.join(terms))
        if minor >= 42 and rng.random() < 0.2:
            params.append('preferred=' + self.generator.trait())
        if minor >= 42 and len(suffixes) > 1 and rng.random() < 0.2:
            params.append('alternatives=%s,%s' % tuple(suffixes[:2]))
        rng.shuffle(params)
        return '/allocation_candidates?' + '&'.join(params)

    def other_read(self):
        """(path, version) of a read of another route."""
        family = self.rng.choice([traffic.list_providers,
                                  traffic.provider_reads, traffic.usages])
        _method, path, version, _body = family(self.generator)
        return path, version

    def write(self, env):
        """A write of the kinds a cloud's clients send, through ``env``."""
        family = self.rng.choice([
            traffic.allocations, traffic.post_allocations,
            traffic.inventories, traffic.inventory, traffic.provider,
            traffic.provider_aggregates, traffic.provider_traits,
            traffic.resource_classes, traffic.reshaper,
            traffic.create_provider, self._claim])
        method, path, version, body = family(self.generator)
        if method == 'GET':
            return
        if body is not None and not isinstance(body, bytes):
            body = json.dumps(body).encode()
        headers = {'x-roles': 'admin,service'} if path == '/reshaper' else (
            None)
        self._send(env, method, path, body, version, headers)

    def _claim(self, generator):
        """A claim (1.43) for one or two new consumers, with extensions
        on; else a consumer's allocations replaced."""
        if not self.extensions:
            return traffic.allocations(generator)
        path, _version = self.candidates()
        path = re.sub(r'&?explain=true', '', path).replace(
            '/allocation_candidates?', '/allocation_claims?')
        consumers = {str(uuid.UUID(int=self.rng.getrandbits(128),
                                   version=4)): {
            'project_id': self.world.projects[0],
            'user_id': self.world.users[0], 'consumer_generation': None,
            'consumer_type': 'INSTANCE'} for _ in range(
                self.rng.randint(1, 2))}
        return 'POST', path, '1.43', {'consumers': consumers}

    def write_as_another_service(self):
        """Rows written straight into the database, as another service on
        it (the reference, in a takeover) writes them: a consumer's
        allocations deleted (no generation moves), or an inventory's
        total changed and its provider's generation bumped."""
        allocations = tables.allocations
        inventories = tables.inventories
        providers = tables.resource_providers
        with self.lived.db.writer() as conn:
            if self.rng.random() < 0.5:
                consumers = conn.execute(sa.select(
                    allocations.c.consumer_id).distinct()).scalars().all()
                if consumers:
                    conn.execute(allocations.delete().where(
                        allocations.c.consumer_id == self.rng.choice(
                            sorted(consumers))))
                return
            rows = conn.execute(sa.select(
                inventories.c.id, inventories.c.resource_provider_id,
                inventories.c.total)).all()
            if not rows:
                return
            row_id, provider_id, total = self.rng.choice(sorted(rows))
            conn.execute(inventories.update().where(
                inventories.c.id == row_id).values(
                    total=total + self.rng.choice([1, 8, 1024])))
            conn.execute(providers.update().where(
                providers.c.id == provider_id).values(
                    generation=providers.c.generation + 1))

    # -- comparing -----------------------------------------------------

    def read(self, index, path, version):
        """Send the read ``path`` at ``version`` to the long-lived process
        and to a fresh one; keep a Mismatch if they differ."""
        self.reads += 1
        turns = same_turn(self.lived)
        lived = self._answer(self.lived, path, version)
        fresh_env = harness.Environment(self.backend, database_url=self.url,
                                        **self.options)
        try:
            turns(fresh_env)
            fresh = self._answer(fresh_env, path, version)
        finally:
            fresh_env.close()
        if lived != fresh:
            self.mismatches.append(Mismatch(index, 'GET', path, version,
                                            lived, fresh))

    def _answer(self, env, path, version):
        status, headers, body = env.respond('GET', path, version=version)
        kept = {name: value for name, value in headers.items()
                if name not in UNCOMPARED_HEADERS}
        return (status, _REQUEST_ID.sub(b'"request_id": "req-"', body),
                tuple(sorted(kept.items())))


def same_turn(env):
    """A function bringing a fresh process to the dispersion turns the
    process ``env`` is at now (engine.dispersion; the Cloud keeps them)."""
    turns = cloud.of(env.db.replica_engine).dispersion_turns.entries()

    def bring(fresh):
        kept = cloud.of(fresh.db.replica_engine).dispersion_turns
        for (key, part), turn in turns:
            kept.put(key, turn, part)
    return bring
