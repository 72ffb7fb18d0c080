"""Run a world against both services and report where they differ."""

import dataclasses
import json
import re

from tests.differential import compare
from tests.differential import traffic
from tests.differential import services
from tests.differential import world as worlds

_PLACEHOLDER = re.compile(rb'"@(c?gen):([0-9a-f-]+)@"')


@dataclasses.dataclass
class Difference:
    seed: int
    backend: str
    index: int  # of the request in the run; negative: a build request
    request: services.Request
    reference: dict
    lite: dict
    listed: str = None  # name of the divergence in compare.LISTED, if one
    drop: tuple = ()
    alone: bool = False  # seen with only this request sent after the build

    def reproduction(self):
        """One line: how to run it again, the request, both answers."""
        command = 'python -m tests.differential --backend %s --seed %d' % (
            self.backend, self.seed)
        if self.index >= 0:
            command += ' --requests %d' % (self.index + 1)
        if self.alone:
            command += ' --only %d' % self.index
        if self.drop:
            command += ' --drop %s' % ','.join('%s:%d' % part
                                               for part in self.drop)
        return '%s | %s | reference: %s | placement_lite: %s' % (
            command, self.request.line(), compare.short(self.reference),
            compare.short(self.lite))


def _admin(method, path, body, version=worlds.BUILD_VERSION):
    headers = [('accept', 'application/json'), ('x-auth-token', 'admin'),
               ('openstack-api-version', 'placement %s' % version)]
    if body:
        headers.append(('content-type', 'application/json'))
    return services.Request(method, path, tuple(headers), body or b'')


def resolve(body, reference):
    """Replace generation placeholders by the reference's current values
    (a provider or consumer that does not exist: 0, or null)."""
    def value(match):
        kind, uuid = match.group(1).decode(), match.group(2).decode()
        if kind == 'gen':
            answer = reference.call(_admin(
                'GET', '/resource_providers/' + uuid, b'', '1.14'))
            return str(answer.json()['generation']
                       if answer.status == 200 else 0).encode()
        answer = reference.call(_admin('GET', '/allocations/' + uuid, b'',
                                       '1.28'))
        return json.dumps(answer.json().get('consumer_generation')
                          if answer.status == 200 else None).encode()
    return _PLACEHOLDER.sub(value, body)


class Run:
    """Both services on one backend, for as many worlds as asked."""

    def __init__(self, backend):
        self.backend = backend
        self.reference = services.Reference(backend)
        self.lite = services.Lite(backend)

    def close(self):
        self.reference.close()
        self.lite.close()

    def world(self, seed, count, drop=frozenset(), only=None):
        """Build world ``seed`` (less ``drop``) in both services and send
        ``count`` generated requests (or, with ``only``, the build then
        request number ``only`` alone). Returns the differences."""
        world = worlds.generate(seed)
        planned = traffic.generate(world, seed, count)
        known = _known_uuids(world, planned)
        self.reference.reset()
        self.lite.reset()
        differences = []
        for number, (method, path, body) in enumerate(worlds.build(world,
                                                                   drop)):
            request = _admin(method, path, body)
            difference = self._send(seed, -1 - number, request, known, world,
                                    drop)
            if difference is not None:
                differences.append(difference)
        for index, (method, path, headers, body) in enumerate(planned):
            if only is not None and index != only:
                continue
            request = services.Request(
                method, path, tuple(headers.items()),
                resolve(body, self.reference) if body else b'')
            difference = self._send(seed, index, request, known, world, drop)
            if difference is not None:
                difference.alone = only is not None
                differences.append(difference)
        return differences

    def _send(self, seed, index, request, known, world, drop):
        # The reference keeps the consumer a refused claim created
        # (divergence "A refused claim leaves no consumer behind"); without
        # it, as in placement_lite, later claims can be compared.
        answer = self.reference.call(
            request, refused_leaves_no_consumer=request.method in ('PUT',
                                                                   'POST'))
        reference = compare.normalise(answer, known)
        lite = compare.normalise(self.lite.call(request), known)
        if reference == lite:
            return None
        case = compare.Case(request.method, request.path, reference, lite,
                            self.backend, bool(world.providers(drop)) and any(
                                ('sharing', i) not in drop
                                for i in range(len(world.sharing))))
        return Difference(seed, self.backend, index, request, reference,
                          lite, compare.listed(case), tuple(sorted(drop)))


def _known_uuids(world, planned):
    text = json.dumps([dataclasses.asdict(world),
                       [(p, b.decode('latin-1') if b else None)
                        for _m, p, _h, b in planned]])
    return set(compare._UUID.findall(text))
