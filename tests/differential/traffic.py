"""Seeded random requests across every route and microversion 1.0-1.39.

Most requests are valid for some state of the world (they name its
providers, consumers, classes and traits, at a microversion where the
route and its parameters exist); about a sixth are made invalid on
purpose: malformed or mistyped JSON, unknown names, bad microversion
headers, non-admin or missing tokens, odd percent-encoding, methods a
route does not have, trailing slashes, bodies without a content type.

Generations are not known when requests are generated (earlier requests
may have changed them), so a body may hold the placeholder
``"@gen:<provider uuid>@"`` or ``"@cgen:<consumer uuid>@"``; the runner
replaces it with the value the reference holds just before sending the
request to both services (see ``runner.resolve``).
"""

import json
import random

from tests.differential import world as worlds

STANDARD_CLASSES = ('VCPU', 'MEMORY_MB', 'DISK_GB', 'SRIOV_NET_VF',
                    'NET_BW_EGR_KILOBIT_PER_SEC', 'PCI_DEVICE')
ADMIN = 'admin'


def generation(provider):
    return '@gen:%s@' % provider


def consumer_generation(consumer):
    return '@cgen:%s@' % consumer


class Generator:
    """Requests for one world; ``rng`` seeded from the world's seed."""

    def __init__(self, world, seed):
        self.world = world
        self.rng = random.Random(seed * 7919 + 1)
        self.providers = [p.uuid for p in world.providers()]
        self.consumers = [c.uuid for c in world.consumers]
        self.new_providers = []
        self.names = [p.name for p in world.providers()]

    # Choices -------------------------------------------------------------

    def chance(self, p):
        return self.rng.random() < p

    def version(self, minimum=0, maximum=39):
        """``1.N`` with N in [minimum, maximum], or sometimes 'latest'."""
        if self.chance(0.05):
            return 'latest'
        return '1.%d' % self.rng.randint(minimum, maximum)

    def provider(self):
        pool = self.providers + self.new_providers
        if not pool or self.chance(0.08):
            return worlds.seeded_uuid(self.rng)
        return self.rng.choice(pool)

    def consumer(self):
        if not self.consumers or self.chance(0.25):
            return worlds.seeded_uuid(self.rng)
        return self.rng.choice(self.consumers)

    def resource_class(self):
        pool = list(STANDARD_CLASSES) + self.world.custom_classes
        if self.chance(0.05):
            return self.rng.choice(['CUSTOM_NOPE', 'VCPUS', 'custom_lower'])
        return self.rng.choice(pool)

    def trait(self):
        pool = list(worlds.STANDARD_TRAITS) + self.world.custom_traits + [
            worlds.SHARES]
        if self.chance(0.05):
            return self.rng.choice(['CUSTOM_UNKNOWN', 'HW_NOPE', 'bad-name'])
        return self.rng.choice(pool)

    def aggregate(self):
        if self.chance(0.1):
            return worlds.seeded_uuid(self.rng)
        return self.rng.choice(self.world.aggregates)

    def project(self):
        return self.rng.choice(self.world.projects)

    def user(self):
        return self.rng.choice(self.world.users)

    # Parameter languages ---------------------------------------------------

    def resources(self, count=None):
        count = count or self.rng.randint(1, 3)
        classes = {self.resource_class() for _ in range(count)}
        return ','.join('%s:%d' % (name, self.rng.choice([1, 1, 2, 3, 64,
                                                          512, 2048]))
                        for name in sorted(classes))

    def required(self, version):
        names = [self.trait() for _ in range(self.rng.randint(1, 2))]
        if version >= 22 and self.chance(0.3):
            names[0] = '!' + names[0]
        if version >= 39 and self.chance(0.2):
            return 'in:' + ','.join(name.lstrip('!') for name in names)
        return ','.join(names)

    def member_of(self, version):
        if version >= 24 and self.chance(0.3):
            return 'in:%s,%s' % (self.aggregate(), self.aggregate())
        if version >= 32 and self.chance(0.2):
            return '!' + self.aggregate()
        return self.aggregate()

    # Families ------------------------------------------------------------

    def next(self):
        """One request: ``(method, path, headers dict, body)`` where body
        is None, bytes, or a JSON-able object."""
        family = self.rng.choices(FAMILIES, WEIGHTS)[0]
        method, path, minor, body = family(self)
        headers = {'accept': 'application/json', 'x-auth-token': ADMIN,
                   'openstack-api-version': 'placement %s' % minor}
        if body is not None and not isinstance(body, bytes):
            body = json.dumps(body).encode()
        if body is not None:
            headers['content-type'] = 'application/json'
        if path == '/reshaper':
            # Reshaping is for services only.
            headers['x-roles'] = 'admin,service'
        if self.chance(1 / 6):
            method, path, headers, body = self.spoil(method, path, headers,
                                                     body)
        return method, path, headers, body

    def spoil(self, method, path, headers, body):
        """Make a request invalid in one of the ways a client can."""
        kind = self.rng.choice(['json', 'type', 'version', 'token',
                                'no-token', 'percent', 'method', 'slash',
                                'no-content-type', 'route', 'accept'])
        if kind == 'json' and body:
            body = body[:max(1, len(body) // 2)]
        elif kind == 'type' and body:
            body = body.replace(b'"', b'', 2) if self.chance(0.5) else (
                b'{"resource_provider_generation": "1", "x": []}')
        elif kind == 'version':
            headers['openstack-api-version'] = self.rng.choice([
                'placement 1.99', 'placement 2.0', 'placement abc',
                'placement 1.3.4', 'compute 1.2', 'placement 0.9',
                'placement  latest'])
        elif kind == 'token':
            headers['x-auth-token'] = 'someone:%s' % self.project()
        elif kind == 'no-token':
            del headers['x-auth-token']
        elif kind == 'percent':
            separator = '&' if '?' in path else '?'
            path += separator + self.rng.choice([
                'name=%ff', 'name=%zz', 'resources=VCPU%3A1', 'name=a+b',
                'project_id=%c3%28', 'member_of=%ff', 'required=%e2%82',
                'uuid=%', 'name=a;b', 'limit=%ff', 'resources=%ff'])
        elif kind == 'method':
            method = self.rng.choice(['PATCH', 'HEAD', 'POST', 'PUT',
                                      'DELETE'])
        elif kind == 'slash':
            path, _sep, query = path.partition('?')
            path = path + '/' + ('?' + query if query else '')
        elif kind == 'no-content-type' and body:
            del headers['content-type']
        elif kind == 'route':
            path = self.rng.choice(['/resource_provider', '/allocation',
                                    '/traits/x/y', '/resource_providers/'
                                    + self.provider() + '/nope', '//'])
        elif kind == 'accept':
            headers['accept'] = self.rng.choice(['text/plain', 'text/html',
                                                 'application/xml'])
        else:
            headers['content-type'] = 'text/plain'
            if not body:
                body = b'x'
        return method, path, headers, body


def _minor(text):
    return 39 if text == 'latest' else int(text.split('.')[1])


def root(g):
    return 'GET', '/', g.version(), None


def list_providers(g):
    minor_text = g.version()
    minor = _minor(minor_text)
    params = []
    for _ in range(g.rng.randint(0, 3)):
        name = g.rng.choice(['name', 'uuid', 'member_of', 'resources',
                             'in_tree', 'required', 'root_required'])
        if name == 'name':
            params.append('name=' + g.rng.choice(g.names + ['nobody']))
        elif name == 'uuid':
            params.append('uuid=' + g.provider())
        elif name == 'member_of':
            params.append('member_of=' + g.member_of(minor))
        elif name == 'resources':
            params.append('resources=' + g.resources())
        elif name == 'in_tree':
            params.append('in_tree=' + g.provider())
        elif name == 'required':
            params.append('required=' + g.required(minor))
        else:
            params.append('root_required=' + g.required(minor).replace(
                'in:', ''))
    query = '?' + '&'.join(params) if params else ''
    return 'GET', '/resource_providers' + query, minor_text, None


def create_provider(g):
    minor_text = g.version()
    body = {'name': g.rng.choice(['new-%d' % g.rng.randint(0, 9)] + g.names)}
    if g.chance(0.8):
        body['uuid'] = worlds.seeded_uuid(g.rng)
        g.new_providers.append(body['uuid'])
    if g.chance(0.4):
        body['parent_provider_uuid'] = g.provider()
    return 'POST', '/resource_providers', minor_text, body


def provider(g):
    uuid = g.provider()
    method = g.rng.choice(['GET', 'GET', 'PUT', 'DELETE'])
    body = None
    if method == 'PUT':
        body = {'name': g.rng.choice(['renamed-%d' % g.rng.randint(0, 9)]
                                     + g.names)}
        if g.chance(0.4):
            body['parent_provider_uuid'] = g.rng.choice([g.provider(), None])
    return method, '/resource_providers/' + uuid, g.version(), body


def _inventory_record(g):
    record = {'total': g.rng.choice([1, 4, 16, 1024])}
    for field, values in (('reserved', [0, 1, 2]),
                          ('allocation_ratio', [1.0, 2.0]),
                          ('min_unit', [1, 2]), ('max_unit', [1, 4, 1024]),
                          ('step_size', [1, 2])):
        if g.chance(0.2):
            record[field] = g.rng.choice(values)
    return record


def inventories(g):
    uuid = g.provider()
    base = '/resource_providers/%s/inventories' % uuid
    method = g.rng.choice(['GET', 'PUT', 'POST', 'DELETE'])
    body = None
    if method == 'PUT':
        body = {'resource_provider_generation': generation(uuid),
                'inventories': {g.resource_class(): _inventory_record(g)
                                for _ in range(g.rng.randint(0, 3))}}
    elif method == 'POST':
        body = dict(_inventory_record(g), resource_class=g.resource_class(),
                    resource_provider_generation=generation(uuid))
    return method, base, g.version(), body


def inventory(g):
    uuid = g.provider()
    path = '/resource_providers/%s/inventories/%s' % (uuid,
                                                      g.resource_class())
    method = g.rng.choice(['GET', 'PUT', 'DELETE'])
    body = None
    if method == 'PUT':
        body = dict(_inventory_record(g),
                    resource_provider_generation=generation(uuid))
    return method, path, g.version(), body


def provider_reads(g):
    what = g.rng.choice(['usages', 'allocations', 'aggregates', 'traits'])
    minimum = {'aggregates': 1, 'traits': 6}.get(what, 0)
    return ('GET', '/resource_providers/%s/%s' % (g.provider(), what),
            g.version(minimum), None)


def provider_aggregates(g):
    uuid = g.provider()
    minor_text = g.version(1)
    aggregates = sorted({g.aggregate() for _ in range(g.rng.randint(0, 2))})
    if _minor(minor_text) >= 19:
        body = {'aggregates': aggregates,
                'resource_provider_generation': generation(uuid)}
    else:
        body = aggregates
    return ('PUT', '/resource_providers/%s/aggregates' % uuid, minor_text,
            body)


def provider_traits(g):
    uuid = g.provider()
    method = g.rng.choice(['PUT', 'PUT', 'DELETE'])
    body = None
    if method == 'PUT':
        body = {'traits': sorted({g.trait() for _ in range(
                    g.rng.randint(0, 3))}),
                'resource_provider_generation': generation(uuid)}
    return (method, '/resource_providers/%s/traits' % uuid, g.version(6),
            body)


def _allocations_body(g, minor, consumer):
    providers = {g.provider() for _ in range(g.rng.randint(1, 2))}
    resources = {uuid: {g.resource_class(): g.rng.choice([1, 1, 2, 4])
                        for _ in range(g.rng.randint(1, 2))}
                 for uuid in providers}
    if minor < 12:
        return {'allocations': [{'resource_provider': {'uuid': uuid},
                                 'resources': amounts}
                                for uuid, amounts in resources.items()],
                **({'project_id': g.project(), 'user_id': g.user()}
                   if minor >= 8 else {})}
    body = {'allocations': {uuid: {'resources': amounts}
                            for uuid, amounts in resources.items()},
            'project_id': g.project(), 'user_id': g.user()}
    if g.chance(0.1):
        body['allocations'] = {}
    if minor >= 28:
        body['consumer_generation'] = consumer_generation(consumer)
    if minor >= 38:
        body['consumer_type'] = g.rng.choice(worlds.CONSUMER_TYPES)
    return body


def allocations(g):
    consumer = g.consumer()
    minor_text = g.version()
    minor = _minor(minor_text)
    method = g.rng.choice(['GET', 'GET', 'PUT', 'DELETE'])
    body = (_allocations_body(g, minor, consumer) if method == 'PUT'
            else None)
    if method == 'PUT' and consumer not in g.consumers:
        g.consumers.append(consumer)
    return method, '/allocations/' + consumer, minor_text, body


def post_allocations(g):
    minor_text = g.version(13)
    minor = _minor(minor_text)
    body = {}
    for _ in range(g.rng.randint(1, 2)):
        consumer = g.consumer()
        body[consumer] = _allocations_body(g, max(minor, 12), consumer)
    return 'POST', '/allocations', minor_text, body


def allocation_candidates(g):
    minor_text = g.version(10)
    minor = _minor(minor_text)
    params = ['resources=' + g.resources()]
    suffixes = []
    if minor >= 25:
        for _ in range(g.rng.randint(0, 2)):
            if minor >= 33 and g.chance(0.5):
                suffix = g.rng.choice(['_COMPUTE', '_NIC', '_X1'])
            else:
                suffix = str(g.rng.randint(1, 3))
            suffixes.append(suffix)
            params.append('resources%s=%s' % (suffix, g.resources(1)))
        if suffixes and g.chance(0.2):
            params[0:1] = []
        if len(params) > 1 and g.chance(0.8):
            params.append('group_policy=' + g.rng.choice(['none',
                                                          'isolate']))
    if minor >= 17 and g.chance(0.3):
        params.append('required=' + g.required(minor))
    if minor >= 25 and suffixes and g.chance(0.3):
        params.append('required%s=%s' % (g.rng.choice(suffixes),
                                         g.required(minor)))
    if minor >= 21 and g.chance(0.2):
        params.append('member_of=' + g.member_of(minor))
    if minor >= 31 and g.chance(0.15):
        params.append('in_tree=' + g.provider())
    if minor >= 35 and g.chance(0.15):
        params.append('root_required=' + g.required(minor).replace('in:', ''))
    if minor >= 36 and len(suffixes) > 1 and g.chance(0.3):
        params.append('same_subtree=' + ','.join(suffixes))
    if minor >= 16 and g.chance(0.2):
        params.append('limit=%d' % g.rng.choice([1, 2, 3, 10]))
    g.rng.shuffle(params)
    return ('GET', '/allocation_candidates?' + '&'.join(params), minor_text,
            None)


def usages(g):
    minor_text = g.version(9)
    params = ['project_id=' + g.project()]
    if g.chance(0.5):
        params.append('user_id=' + g.user())
    if _minor(minor_text) >= 38 and g.chance(0.4):
        params.append('consumer_type=' + g.rng.choice(
            list(worlds.CONSUMER_TYPES) + ['all', 'unknown']))
    if g.chance(0.1):
        params = params[1:]
    return 'GET', '/usages?' + '&'.join(params), minor_text, None


def traits(g):
    minor_text = g.version(6)
    roll = g.rng.random()
    if roll < 0.4:
        params = []
        if g.chance(0.5):
            params.append('name=' + g.rng.choice([
                'startswith:CUSTOM', 'startswith:HW_CPU',
                'in:%s,%s' % (g.trait(), g.trait())]))
        if g.chance(0.4):
            params.append('associated=' + g.rng.choice(['true', 'false',
                                                        'yes']))
        return ('GET', '/traits' + ('?' + '&'.join(params) if params
                                    else ''), minor_text, None)
    name = g.trait() if g.chance(0.7) else 'CUSTOM_NEW%d' % g.rng.randint(
        0, 5)
    return (g.rng.choice(['GET', 'PUT', 'DELETE']), '/traits/' + name,
            minor_text, None)


def resource_classes(g):
    minor_text = g.version(2)
    roll = g.rng.random()
    if roll < 0.3:
        return 'GET', '/resource_classes', minor_text, None
    name = g.resource_class() if g.chance(0.6) else 'CUSTOM_NEW%d' % (
        g.rng.randint(0, 5))
    if roll < 0.45:
        return 'POST', '/resource_classes', minor_text, {'name': name}
    method = g.rng.choice(['GET', 'PUT', 'DELETE'])
    body = ({'name': 'CUSTOM_RENAMED'} if method == 'PUT' and g.chance(0.3)
            else None)
    return method, '/resource_classes/' + name, minor_text, body


def reshaper(g):
    minor_text = g.version(30)
    minor = _minor(minor_text)
    inventories = {}
    for uuid in {g.provider() for _ in range(g.rng.randint(1, 2))}:
        inventories[uuid] = {
            'resource_provider_generation': generation(uuid),
            'inventories': {g.resource_class(): _inventory_record(g)}}
    consumer = g.consumer()
    allocation = _allocations_body(g, max(minor, 28), consumer)
    allocation.pop('consumer_type', None)
    if minor >= 38:
        allocation['consumer_type'] = 'INSTANCE'
    return 'POST', '/reshaper', minor_text, {
        'inventories': inventories, 'allocations': {consumer: allocation}}


FAMILIES = (root, list_providers, create_provider, provider, inventories,
            inventory, provider_reads, provider_aggregates, provider_traits,
            allocations, post_allocations, allocation_candidates, usages,
            traits, resource_classes, reshaper)
WEIGHTS = (1, 6, 2, 4, 4, 3, 5, 2, 2, 5, 2, 12, 3, 3, 3, 2)


def generate(world, seed, count):
    """``count`` requests for ``world``: (method, path, headers, body)."""
    generator = Generator(world, seed)
    return [generator.next() for _ in range(count)]
