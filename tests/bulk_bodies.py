"""The largest bodies ``[api] max_request_body_size`` admits (1 MiB by
default), for each route that takes a bulk body and each kind of answer
it can give one, and the world they are sent to.

``tests/test_bulk_bodies.py`` checks the answer to each;
``python -m tests.bench.bulk_bodies`` times them. Every body is compact
JSON holding as many entries as fit under the limit; names are the
shortest the route accepts, so that a body names as many things as it
can.

The world holds, besides the standard names, as many custom resource
classes and custom traits as the largest body can name, and as many
providers (each with VCPU) as the largest allocation or reshaper body
can name. They are inserted in SQL: through the API they would take
minutes.
"""

import dataclasses
import itertools
import json
import uuid as uuidlib

import sqlalchemy as sa

from placement_lite import conf
from placement_lite.db import lookups
from placement_lite.db import tables
from placement_lite.domain import standard_names

LIMIT = conf.DEFAULT_MAX_BODY_SIZE
#: Characters of resource class and trait names.
NAME_CHARACTERS = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_'

PROJECT = 'p'
USER = 'u'
CONSUMER_TYPE = 'I'
#: The roles of every request: reshaping is a service's job.
ROLES = {'x-roles': 'admin,service'}
#: VCPU every provider of the world has: more than any body claims.
VCPU_TOTAL = 1_000_000


def short_names(prefix=''):
    """``prefix`` + the shortest names first: A, B, ..., AA, AB, ..."""
    for length in itertools.count(1):
        for letters in itertools.product(NAME_CHARACTERS, repeat=length):
            yield prefix + ''.join(letters)


def uuid_of(kind, number):
    """A fixed uuid, different for each (kind, number)."""
    return str(uuidlib.UUID(int=(kind << 64) | number))


def fill(head, entries, tail, limit=LIMIT):
    """``head`` + as many of ``entries`` (JSON texts) as fit, comma
    separated, + ``tail``, as bytes of at most ``limit``; and how many
    entries it holds."""
    room = limit - len(head.encode()) - len(tail.encode())
    taken = []
    for entry in entries:
        size = len(entry.encode()) + (1 if taken else 0)
        if size > room:
            break
        taken.append(entry)
        room -= size
    return (head + ','.join(taken) + tail).encode(), len(taken)


def compact(document):
    return json.dumps(document, separators=(',', ':'))


def inventory_entries(names, total=1):
    return ('"%s":{"total":%d}' % (name, total) for name in names)


def inventories_body(generation, entries, last=None):
    """A PUT /resource_providers/{uuid}/inventories body with as many of
    ``entries`` as fit, then ``last`` (a JSON entry) when given."""
    head = '{"resource_provider_generation":%d,"inventories":{' % generation
    tail = '}}' if last is None else ',%s}}' % last
    return fill(head, entries, tail)


#: Names of the custom classes the largest inventories body can name.
CUSTOM_CLASSES = list(itertools.islice(
    short_names('CUSTOM_'),
    inventories_body(0, inventory_entries(short_names('CUSTOM_')))[1]))
#: Names of the custom traits the largest traits body can name.
CUSTOM_TRAITS = list(itertools.islice(short_names('CUSTOM_'), fill(
    '{"resource_provider_generation":0,"traits":[',
    ('"%s"' % name for name in short_names('CUSTOM_')), ']}')[1]))


def allocation(providers, resources='{"VCPU":1}'):
    """One provider map of an allocations body (1.12 and later)."""
    return '{%s}' % ','.join('"%s":{"resources":%s}' % (provider, resources)
                             for provider in providers)


def consumer_body(allocations, generation=None):
    """One consumer's body at microversion 1.38 and later."""
    return '{"allocations":%s%s' % (allocations, owner_tail(generation))


def owner_tail(generation=None):
    """What follows a consumer's allocations in its body (1.38 and later)."""
    return (',"project_id":"%s","user_id":"%s","consumer_generation":%s,'
            '"consumer_type":"%s"}' % (PROJECT, USER, compact(generation),
                                       CONSUMER_TYPE))


def provider_count():
    """How many providers the largest body naming providers can name: one
    consumer's allocations on one VCPU of each."""
    return fill('{"allocations":{', ('"%s":{"resources":{"VCPU":1}}'
                                     % uuid_of(1, number)
                                     for number in itertools.count()),
                '}' + owner_tail())[1]


PROVIDERS = [uuid_of(1, number) for number in range(provider_count())]
#: The provider whose inventories the inventories bodies replace.
HOST = uuid_of(2, 0)
#: A provider with inventory of every custom class, each allocated.
BUSY_HOST = uuid_of(2, 1)
#: The consumer of BUSY_HOST's allocations.
BUSY_CONSUMER = uuid_of(3, 0)


@dataclasses.dataclass
class World:
    """What the seeded database holds, for the bodies built on it."""

    env: object
    #: What a Case's path names: ``{host}``, ``{busy}`` and what body
    #: builders add (a provider or consumer made for the body).
    names: dict = dataclasses.field(
        default_factory=lambda: {'host': HOST, 'busy': BUSY_HOST})
    _made: itertools.count = dataclasses.field(
        default_factory=itertools.count)

    def fresh_uuids(self, count):
        """Uuids nothing in the world has used."""
        return [uuid_of(9, next(self._made)) for _ in range(count)]

    def request(self, method, path, body=None, version='latest'):
        status, _headers, answer = self.env.request(
            method, path, body, version=version, headers=ROLES)
        assert status < 300, (method, path, status, answer)
        return answer

    def generation(self, provider):
        return self.request('GET', '/resource_providers/%s' % provider)[
            'generation']

    def consumer_generation(self, consumer):
        return self.request('GET', '/allocations/%s' % consumer).get(
            'consumer_generation')


def seed(env):
    """Seed the world into ``env``'s database; returns a World."""
    now = lookups.utcnow()
    first_custom = standard_names.FIRST_CUSTOM_RESOURCE_CLASS_ID
    with env.db.engine.begin() as conn:
        conn.execute(tables.resource_classes.insert(), [
            {'id': first_custom + index, 'name': name, 'created_at': now}
            for index, name in enumerate(CUSTOM_CLASSES)])
        conn.execute(tables.traits.insert(), [
            {'name': name, 'created_at': now} for name in CUSTOM_TRAITS])
        conn.execute(tables.resource_providers.insert(), [
            {'uuid': uuid, 'name': uuid, 'generation': 0, 'created_at': now}
            for uuid in PROVIDERS + [HOST, BUSY_HOST]])
        rp = tables.resource_providers
        # Generation 1, as after the write of their inventories.
        conn.execute(rp.update().values(root_provider_id=rp.c.id,
                                        generation=1))
        ids = dict(conn.execute(sa.select(rp.c.uuid, rp.c.id)).all())
        vcpu = lookups.resource_class_ids(conn, ['VCPU'])['VCPU']
        record = {'reserved': 0, 'min_unit': 1, 'max_unit': VCPU_TOTAL,
                  'step_size': 1, 'allocation_ratio': 1.0,
                  'created_at': now}
        conn.execute(tables.inventories.insert(), [
            dict(record, resource_provider_id=ids[uuid],
                 resource_class_id=vcpu, total=VCPU_TOTAL)
            for uuid in PROVIDERS])
        conn.execute(tables.inventories.insert(), [
            dict(record, resource_provider_id=ids[BUSY_HOST],
                 resource_class_id=first_custom + index, total=2)
            for index in range(len(CUSTOM_CLASSES))])
        project = conn.execute(tables.projects.insert().values(
            external_id=PROJECT, created_at=now)).inserted_primary_key[0]
        user = conn.execute(tables.users.insert().values(
            external_id=USER, created_at=now)).inserted_primary_key[0]
        consumer_type = conn.execute(tables.consumer_types.insert().values(
            name=CONSUMER_TYPE, created_at=now)).inserted_primary_key[0]
        conn.execute(tables.consumers.insert().values(
            uuid=BUSY_CONSUMER, project_id=project, user_id=user,
            consumer_type_id=consumer_type, generation=1, created_at=now))
        conn.execute(tables.allocations.insert(), [
            {'resource_provider_id': ids[BUSY_HOST],
             'resource_class_id': first_custom + index,
             'consumer_id': BUSY_CONSUMER, 'used': 2, 'created_at': now}
            for index in range(len(CUSTOM_CLASSES))])
    return World(env)


@dataclasses.dataclass
class Case:
    """One route's body of maximal size, built for one kind of answer."""

    name: str
    method: str
    #: The path; its fields are filled from World.names.
    path: str
    #: (world) -> body bytes, made just before the request is sent.
    body: object
    version: str = 'latest'

    def url(self, world):
        return self.path.format_map(world.names)


CASES = []


def case(method, path, version='latest'):
    """Register the decorated body builder as a Case named after it."""
    def register(build):
        CASES.append(Case(build.__name__, method, path, build, version))
        return build
    return register


INVENTORIES = '/resource_providers/{host}/inventories'
BUSY_INVENTORIES = '/resource_providers/{busy}/inventories'


@case('PUT', INVENTORIES)
def inventories_unknown_classes(world):
    return inventories_body(world.generation(HOST),
                            inventory_entries(short_names()))[0]


@case('PUT', INVENTORIES)
def inventories_not_objects(world):
    return inventories_body(world.generation(HOST), (
        '"%s":0' % name for name in short_names()))[0]


@case('PUT', INVENTORIES)
def inventories_without_total(world):
    return inventories_body(world.generation(HOST), (
        '"%s":{}' % name for name in short_names()))[0]


@case('PUT', INVENTORIES)
def inventories_total_zero(world):
    return inventories_body(world.generation(HOST),
                            inventory_entries(short_names(), total=0))[0]


@case('PUT', INVENTORIES)
def inventories_unlisted_names(world):
    """Names the schema's pattern does not cover: each record is checked
    on its own, then the first name is unknown."""
    return inventories_body(world.generation(HOST), inventory_entries(
        name.lower() for name in short_names()))[0]


@case('PUT', INVENTORIES)
def inventories_unlisted_last_invalid(world):
    return inventories_body(
        world.generation(HOST),
        inventory_entries(name.lower() for name in short_names()),
        last='"-":{"total":0}')[0]


@case('PUT', INVENTORIES)
def inventories_reserved_over_total(world):
    return inventories_body(
        world.generation(HOST), inventory_entries(CUSTOM_CLASSES[:-1]),
        last='"%s":{"total":1,"reserved":2}' % CUSTOM_CLASSES[-1])[0]


@case('PUT', '/resource_providers/{new}/inventories')
def inventories_new_classes(world):
    """Every custom class, on a provider that has no inventory yet."""
    [provider] = world.fresh_uuids(1)
    world.request('POST', '/resource_providers',
                  {'name': provider, 'uuid': provider})
    world.names['new'] = provider
    return inventories_body(0, inventory_entries(CUSTOM_CLASSES))[0]


@case('PUT', INVENTORIES)
def inventories_same_classes(world):
    """Every custom class, on a provider that has the same already."""
    path = INVENTORIES.format(host=HOST)
    if not world.request('GET', path)['inventories']:
        world.request('PUT', path, inventories_body(
            world.generation(HOST), inventory_entries(CUSTOM_CLASSES))[0])
    return inventories_body(world.generation(HOST),
                            inventory_entries(CUSTOM_CLASSES))[0]


@case('PUT', BUSY_INVENTORIES)
def inventories_drop_class_in_use(world):
    return inventories_body(world.generation(BUSY_HOST), inventory_entries(
        CUSTOM_CLASSES[:-1], total=2))[0]


@case('PUT', BUSY_INVENTORIES)
def inventories_below_usage(world):
    """Every class BUSY_HOST has, below what is allocated: accepted (the
    provider is then over capacity, which is logged)."""
    return inventories_body(world.generation(BUSY_HOST),
                            inventory_entries(CUSTOM_CLASSES))[0]


def consumers_body(entries):
    """A POST /allocations body: as many ``(uuid, consumer body)`` of
    ``entries`` as fit."""
    return fill('{', ('"%s":%s' % entry for entry in entries), '}')[0]


def new_consumers(world, allocations):
    """(fresh consumer uuid, body) for each of ``allocations``."""
    for provider_map in allocations:
        [consumer] = world.fresh_uuids(1)
        yield consumer, consumer_body(provider_map)


def one_vcpu_each():
    """Allocation maps: one VCPU of each provider in turn."""
    return (allocation([provider]) for provider in itertools.cycle(PROVIDERS))


#: Consumers that POST /allocations bodies write again and again: as
#: many as fit with the longest generation ("null").
EXISTING_CONSUMERS = [uuid_of(5, number) for number in range(fill(
    '{', ('"%s":%s' % (uuid_of(5, number), consumer_body(provider_map))
          for number, provider_map in enumerate(one_vcpu_each())), '}')[1])]


def existing_consumers(world, generations=None):
    """(consumer, body) for each of EXISTING_CONSUMERS, one VCPU of a
    provider each, at the generation it has (made first if need be), or
    at ``generations(current)`` (one generation per consumer) when given."""
    current = world.consumer_generation(EXISTING_CONSUMERS[0])
    if current is None:
        world.request('POST', '/allocations', consumers_body(zip(
            EXISTING_CONSUMERS, map(consumer_body, one_vcpu_each()))))
        current = world.consumer_generation(EXISTING_CONSUMERS[0])
    given = (itertools.repeat(current) if generations is None
             else generations(current))
    return [(consumer, consumer_body(provider_map, generation))
            for consumer, provider_map, generation
            in zip(EXISTING_CONSUMERS, one_vcpu_each(), given)]


@case('POST', '/allocations')
def allocations_new_consumers(world):
    return consumers_body(new_consumers(world, one_vcpu_each()))


@case('POST', '/allocations')
def allocations_existing_consumers(world):
    return consumers_body(existing_consumers(world))


@case('POST', '/allocations')
def allocations_bad_generation(world):
    """The last consumer names a generation it does not have."""
    def last_wrong(current):
        return [current] * (len(EXISTING_CONSUMERS) - 1) + [current + 1]
    return consumers_body(existing_consumers(world, last_wrong))


@case('POST', '/allocations')
def allocations_over_capacity(world):
    """Consumers of one VCPU each of one provider, the last of all it has."""
    [last] = world.fresh_uuids(1)
    everything = consumer_body(allocation(PROVIDERS[:1], '{"VCPU":%d}'
                                          % VCPU_TOTAL))
    return fill('{', ('"%s":%s' % entry for entry in new_consumers(
        world, itertools.repeat(allocation(PROVIDERS[:1])))),
        ',"%s":%s}' % (last, everything))[0]


def one_consumer(consumer=None, generation=None, providers=(),
                 classes=()):
    """One consumer's body, on as many of ``providers`` (one VCPU each)
    as fit, or on the first provider with one of each of as many of
    ``classes`` as fit; wrapped as a POST /allocations body when
    ``consumer`` (its uuid) is given."""
    head, tail = '{"allocations":{', '}' + owner_tail(generation)
    if consumer is not None:
        head, tail = '{"%s":%s' % (consumer, head), tail + '}'
    if classes:
        head += '"%s":{"resources":{' % PROVIDERS[0]
        tail = '}}' + tail
        entries = ('"%s":1' % name for name in classes)
    else:
        entries = ('"%s":{"resources":{"VCPU":1}}' % provider
                   for provider in providers)
    return fill(head, entries, tail)[0]


def unknown_providers():
    return (uuid_of(6, number) for number in itertools.count())


@case('POST', '/allocations')
def allocations_unknown_providers(world):
    return one_consumer(world.fresh_uuids(1)[0],
                        providers=unknown_providers())


@case('POST', '/allocations')
def allocations_unknown_classes(world):
    return one_consumer(world.fresh_uuids(1)[0], classes=short_names())


#: The consumer the bodies naming every provider are for.
WIDE_CONSUMER = uuid_of(7, 0)


@case('POST', '/allocations')
def allocations_many_providers(world):
    return one_consumer(WIDE_CONSUMER,
                        world.consumer_generation(WIDE_CONSUMER),
                        providers=PROVIDERS)


@case('POST', '/allocations')
def allocations_not_objects(world):
    return consumers_body((consumer, '0') for consumer in
                          world.fresh_uuids(30_000))


@case('POST', '/allocations')
def allocations_bad_keys(world):
    """Keys that are no consumer uuid: one error names them all."""
    return consumers_body((name, '0') for name in short_names())


@case('POST', '/allocations')
def allocations_zero_amounts(world):
    return consumers_body(new_consumers(world, (
        allocation([provider], '{"VCPU":0}')
        for provider in itertools.cycle(PROVIDERS))))


CONSUMER = '/allocations/{consumer}'


def _for_consumer(world, consumer):
    world.names['consumer'] = consumer
    return world.consumer_generation(consumer)


@case('PUT', CONSUMER)
def consumer_many_providers(world):
    return one_consumer(generation=_for_consumer(world, WIDE_CONSUMER),
                        providers=PROVIDERS)


@case('PUT', CONSUMER)
def consumer_unknown_providers(world):
    _for_consumer(world, world.fresh_uuids(1)[0])
    return one_consumer(providers=unknown_providers())


@case('PUT', CONSUMER)
def consumer_unknown_classes(world):
    _for_consumer(world, world.fresh_uuids(1)[0])
    return one_consumer(classes=short_names())


RESHAPER = '/reshaper'
#: An inventory equal to what the world gives each provider.
SAME_VCPU = '{"VCPU":{"total":%d,"max_unit":%d}}' % (VCPU_TOTAL, VCPU_TOTAL)


def generations(world):
    """{provider uuid: generation} of every provider."""
    return {provider['uuid']: provider['generation'] for provider in
            world.request('GET', '/resource_providers')['resource_providers']}


def reshaper_body(inventories, consumers=(), last=None):
    """As many of ``inventories`` ((provider, generation, inventories
    JSON)) as fit with ``last``, and the allocations of ``consumers``
    ((uuid, consumer body)); or as many consumers as fit."""
    inventory_texts = ('"%s":{"resource_provider_generation":%d,'
                       '"inventories":%s}' % entry for entry in inventories)
    if consumers:
        head = '{"inventories":{%s},"allocations":{' % ','.join(
            inventory_texts)
        return fill(head, ('"%s":%s' % entry for entry in consumers), '}}')[0]
    tail = '},"allocations":{}}'
    if last is not None:
        tail = ',"%s":{"resource_provider_generation":%d,"inventories":%s}' \
            % last + tail
    return fill('{"inventories":{', inventory_texts, tail)[0]


@case('POST', RESHAPER)
def reshaper_many_providers(world):
    current = generations(world)
    return reshaper_body((provider, current[provider], SAME_VCPU)
                         for provider in PROVIDERS)


@case('POST', RESHAPER)
def reshaper_unknown_providers(world):
    return reshaper_body((provider, 0, SAME_VCPU)
                         for provider in unknown_providers())


@case('POST', RESHAPER)
def reshaper_bad_generation(world):
    """The last provider is named with a generation it does not have."""
    current = generations(world)
    return reshaper_body(
        ((provider, current[provider], SAME_VCPU)
         for provider in PROVIDERS[1:]),
        last=(PROVIDERS[0], current[PROVIDERS[0]] + 1, SAME_VCPU))


@case('POST', RESHAPER)
def reshaper_many_classes(world):
    """As many custom classes as fit, on a provider that has them all."""
    inventories_same_classes(world)
    return fill('{"inventories":{"%s":{"resource_provider_generation":%d,'
                '"inventories":{' % (HOST, world.generation(HOST)),
                inventory_entries(CUSTOM_CLASSES), '}}},"allocations":{}}')[0]


@case('POST', RESHAPER)
def reshaper_many_consumers(world):
    return reshaper_body(
        [(PROVIDERS[0], world.generation(PROVIDERS[0]), SAME_VCPU)],
        new_consumers(world, one_vcpu_each()))


TRAITS = '/resource_providers/{host}/traits'


def traits_body(world, names):
    return fill('{"resource_provider_generation":%d,"traits":['
                % world.generation(HOST), names, ']}')[0]


@case('PUT', TRAITS)
def traits_unknown(world):
    return traits_body(world, ('"%s"' % name for name in short_names()))


@case('PUT', TRAITS)
def traits_many(world):
    return traits_body(world, ('"%s"' % name for name in CUSTOM_TRAITS))


@case('PUT', TRAITS)
def traits_not_strings(world):
    return traits_body(world, itertools.repeat('0'))


@case('PUT', TRAITS)
def traits_long_string(world):
    """One trait name as long as fits, of characters an error page's tag
    stripping works hardest on."""
    head = '{"resource_provider_generation":%d,"traits":["' % (
        world.generation(HOST))
    return (head + '<' * (LIMIT - len(head) - 3) + '"]}').encode()


AGGREGATES = '/resource_providers/{host}/aggregates'


def aggregates_body(world, entries, last=None):
    tail = ']}' if last is None else ',%s]}' % last
    return fill('{"resource_provider_generation":%d,"aggregates":['
                % world.generation(HOST), entries, tail)[0]


def aggregate_uuids():
    return ('"%s"' % uuid_of(10, number) for number in itertools.count())


@case('PUT', AGGREGATES)
def aggregates_many(world):
    return aggregates_body(world, aggregate_uuids())


@case('PUT', AGGREGATES)
def aggregates_duplicate(world):
    return aggregates_body(world, aggregate_uuids(),
                           last=next(aggregate_uuids()))


@case('PUT', AGGREGATES)
def aggregates_mixed(world):
    """Numbers and names, all different: no order sorts them."""
    return aggregates_body(world, itertools.chain.from_iterable(
        (str(number), '"%s"' % name)
        for number, name in enumerate(short_names())))


@case('PUT', AGGREGATES)
def aggregates_not_uuids(world):
    return aggregates_body(world, ('"%s"' % name for name in short_names()))


def lists_then(world, last):
    """A traits body whose list holds empty lists, then ``last``."""
    return fill('{"resource_provider_generation":%d,"traits":['
                % world.generation(HOST), itertools.repeat('[]'),
                ',%s]}' % last)[0]


@case('PUT', TRAITS)
def json_nul_after_lists(world):
    return lists_then(world, '"\\u0000"')


@case('PUT', TRAITS)
def json_nul_and_surrogate_after_lists(world):
    return lists_then(world, '"\\u0000","\\ud800"')


@case('PUT', TRAITS)
def json_too_deep_after_lists(world):
    return lists_then(world, '[' * 40 + ']' * 40)
