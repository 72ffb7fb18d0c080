"""The largest bodies ``[api] max_request_body_size`` admits, for each
route that takes a bulk body (tests/bulk_bodies.py): each gets its answer,
status, error code and words, and a refused one changes nothing in the
database.

A schema error's words are what jsonschema itself says of the body (its
``validate``'s best match), so that the one-pass search of
placement_lite.schema_errors is checked on bodies of 100,000 wrong
entries too. How long the bodies take is measured by
``python -m tests.bench.bulk_bodies``, not asserted here.
"""

import json

import jsonschema
import pytest
import sqlalchemy as sa

from placement_lite import errors
from placement_lite.db import tables
from placement_lite.handlers import validation
from placement_lite.schemas import aggregates
from placement_lite.schemas import allocations
from placement_lite.schemas import inventories
from placement_lite.schemas import provider_traits
from tests import bulk_bodies
from tests import harness

pytestmark = pytest.mark.slow

HOST = bulk_bodies.HOST
BUSY_HOST = bulk_bodies.BUSY_HOST
FIRST_PROVIDER = bulk_bodies.PROVIDERS[0]
UNKNOWN_PROVIDER = bulk_bodies.uuid_of(6, 0)
LAST_CLASS = bulk_bodies.CUSTOM_CLASSES[-1]


def schema_error(schema):
    """The message of jsonschema's own validation of the body, found once
    per body (on 100,000 wrong entries jsonschema takes seconds; the
    service, a tenth of a second): the backends are sent the same body."""
    found = {}

    def message(world, data):
        key = json.dumps(data)
        if key not in found:
            validator = jsonschema.validators.validator_for(schema)(
                schema, format_checker=validation._BODY_FORMATS)
            found[key] = 'JSON does not validate: %s' % (
                jsonschema.exceptions.best_match(validator.iter_errors(data)))
        return found[key]
    return message


def words(text):
    return lambda world, data: text


#: {body: (status, error code, (world, parsed body) -> the error's words)}
REFUSED = {
    'inventories_unknown_classes': (
        400, 'placement.undefined_code', words(
            'Unknown resource class in inventory for resource provider %s: '
            'No such resource class A.' % HOST)),
    'inventories_not_objects': (
        400, 'placement.undefined_code', schema_error(inventories.REPLACE_ALL)),
    'inventories_without_total': (
        400, 'placement.undefined_code', schema_error(inventories.REPLACE_ALL)),
    'inventories_total_zero': (
        400, 'placement.undefined_code', schema_error(inventories.REPLACE_ALL)),
    'inventories_unlisted_names': (
        400, 'placement.undefined_code', words(
            'Unknown resource class in inventory for resource provider %s: '
            'No such resource class a.' % HOST)),
    'inventories_unlisted_last_invalid': (
        400, 'placement.undefined_code',
        lambda world, data: schema_error(inventories.INVENTORY_RECORD)(
            world, data['inventories']['-'])),
    'inventories_reserved_over_total': (
        400, 'placement.undefined_code', words(
            "Unable to update inventory for resource provider %s: Invalid "
            "inventory for '%s' on resource provider '%s'. The reserved "
            "value is greater than total."
            % (HOST, LAST_CLASS, HOST))),
    'inventories_drop_class_in_use': (
        409, 'placement.inventory.inuse', words(
            "update conflict: Inventory for '%s' on resource provider '%s' "
            "in use." % (LAST_CLASS, BUSY_HOST))),
    'allocations_bad_generation': (
        409, 'placement.concurrent_update', lambda world, data: (
            'consumer generation conflict - expected %d but got %d' % (
                world.consumer_generation(bulk_bodies.EXISTING_CONSUMERS[0]),
                world.consumer_generation(
                    bulk_bodies.EXISTING_CONSUMERS[0]) + 1))),
    'allocations_over_capacity': (
        409, 'placement.undefined_code', words(
            "Unable to allocate inventory: Unable to create allocation for "
            "'VCPU' on resource provider '%s'. The requested amount would "
            "exceed the capacity." % FIRST_PROVIDER)),
    'allocations_unknown_providers': (
        400, 'placement.undefined_code', words(
            "Allocation for resource provider '%s' that does not exist."
            % UNKNOWN_PROVIDER)),
    'allocations_unknown_classes': (
        400, 'placement.undefined_code', words(
            'Unable to allocate inventory No such resource class A.')),
    'allocations_not_objects': (
        400, 'placement.undefined_code',
        schema_error(allocations.POST_SCHEMAS[0][1])),
    'allocations_bad_keys': (
        400, 'placement.undefined_code',
        schema_error(allocations.POST_SCHEMAS[0][1])),
    'allocations_zero_amounts': (
        400, 'placement.undefined_code',
        schema_error(allocations.POST_SCHEMAS[0][1])),
    'consumer_unknown_providers': (
        400, 'placement.undefined_code', words(
            "Allocation for resource provider '%s' that does not exist."
            % UNKNOWN_PROVIDER)),
    'consumer_unknown_classes': (
        400, 'placement.undefined_code', lambda world, data: (
            'Unable to allocate inventory for consumer %s: No such resource '
            'class A.' % world.names['consumer'])),
    'reshaper_unknown_providers': (
        400, 'placement.resource_provider.not_found', words(
            'Resource provider %s in inventories not found: No resource '
            'provider with uuid %s found' % (UNKNOWN_PROVIDER,
                                             UNKNOWN_PROVIDER))),
    'reshaper_bad_generation': (
        409, 'placement.concurrent_update', lambda world, data: (
            'resource provider generation conflict for provider %s: '
            'actual: %d, given: %d' % (
                FIRST_PROVIDER, world.generation(FIRST_PROVIDER),
                world.generation(FIRST_PROVIDER) + 1))),
    'traits_unknown': (
        400, 'placement.undefined_code', lambda world, data: (
            'No such trait %s' % ', '.join(sorted(data['traits'])))),
    'traits_not_strings': (
        400, 'placement.undefined_code',
        schema_error(provider_traits.SET_TRAITS)),
    'traits_long_string': (
        400, 'placement.undefined_code',
        schema_error(provider_traits.SET_TRAITS)),
    'aggregates_duplicate': (
        400, 'placement.undefined_code',
        schema_error(aggregates.SET_AGGREGATES[0][1])),
    # jsonschema's own uniqueItems would compare every pair of these
    # 170,000 items, which no order sorts: the error of the last item.
    'aggregates_mixed': (
        400, 'placement.undefined_code', lambda world, data: (
            "JSON does not validate: %r is not a 'uuid'\n\nFailed validating "
            "'format' in schema['properties']['aggregates']['items']:\n    "
            "{'type': 'string', 'format': 'uuid'}\n\nOn instance"
            "['aggregates'][%d]:\n    %r" % (
                data['aggregates'][-1], len(data['aggregates']) - 1,
                data['aggregates'][-1]))),
    'aggregates_not_uuids': (
        400, 'placement.undefined_code',
        schema_error(aggregates.SET_AGGREGATES[0][1])),
    'json_nul_after_lists': (
        400, 'placement.undefined_code', words(
            'Malformed JSON: strings may not contain the NUL character')),
    'json_nul_and_surrogate_after_lists': (
        400, 'placement.undefined_code', words(
            'Malformed JSON: strings may not contain unpaired surrogates '
            '(\\ud800-\\udfff)')),
    'json_too_deep_after_lists': (
        400, 'placement.undefined_code', words(
            'Malformed JSON: nested more than 32 levels deep')),
}

#: {body: (status, (world, answer) -> whether it is the expected one)}
ACCEPTED = {
    'inventories_new_classes': (200, lambda world, answer: len(
        answer['inventories']) == len(bulk_bodies.CUSTOM_CLASSES)),
    'inventories_same_classes': (200, lambda world, answer: len(
        answer['inventories']) == len(bulk_bodies.CUSTOM_CLASSES)),
    'inventories_below_usage': (200, lambda world, answer: all(
        inventory['total'] == 1
        for inventory in answer['inventories'].values())),
    'allocations_new_consumers': (204, None),
    'allocations_existing_consumers': (204, None),
    'allocations_many_providers': (204, lambda world, answer: len(
        world.request('GET', '/allocations/%s' % bulk_bodies.WIDE_CONSUMER)[
            'allocations']) > 16_000),
    'consumer_many_providers': (204, None),
    'reshaper_many_providers': (204, None),
    'reshaper_many_classes': (204, lambda world, answer: len(world.request(
        'GET', '/resource_providers/%s/inventories' % HOST)[
            'inventories']) > 41_000),
    'reshaper_many_consumers': (204, None),
    'traits_many': (200, lambda world, answer: len(answer['traits']) == len(
        bulk_bodies.CUSTOM_TRAITS)),
    'aggregates_many': (200, lambda world, answer: len(
        answer['aggregates']) > 26_000),
}


def test_every_body_has_one_expected_answer():
    assert not set(REFUSED) & set(ACCEPTED)
    assert set(REFUSED) | set(ACCEPTED) == {
        case.name for case in bulk_bodies.CASES}


@pytest.fixture(scope='module')
def worlds():
    """{backend: World}, each seeded once (it takes seconds)."""
    seeded = {}
    yield seeded
    for world in seeded.values():
        world.env.close()


@pytest.fixture
def world(backend, worlds):
    if backend not in worlds:
        worlds[backend] = bulk_bodies.seed(harness.Environment(backend))
    return worlds[backend]


def _fingerprint(db):
    """Per table: how many rows, and the largest id, generation, creation
    and update time (the sum of generations): what any insert, delete or
    update placement_lite makes changes."""
    found = {}
    with db.engine.connect() as conn:
        for table in tables.metadata.sorted_tables:
            columns = [sa.func.count()]
            for name in ('id', 'generation', 'created_at', 'updated_at'):
                if name in table.c:
                    columns.append(sa.func.max(table.c[name]))
            if 'generation' in table.c:
                columns.append(sa.func.sum(table.c.generation))
            found[table.name] = tuple(conn.execute(
                sa.select(*columns).select_from(table)).one())
    return found


def _send(world, case, body):
    assert len(body) <= bulk_bodies.LIMIT
    status, _headers, answer = world.env.request(
        case.method, case.url(world), body, version=case.version,
        headers=bulk_bodies.ROLES)
    return status, answer


def _case(name):
    return next(case for case in bulk_bodies.CASES if case.name == name)


@pytest.mark.parametrize('name', sorted(REFUSED))
def test_a_refused_body_gets_its_answer_and_changes_nothing(world, name):
    case = _case(name)
    status, code, message = REFUSED[name]
    body = case.body(world)
    before = _fingerprint(world.env.db)
    got_status, answer = _send(world, case, body)
    assert (got_status, answer['errors'][0]['code']) == (status, code)
    assert answer['errors'][0]['detail'] == errors.detail_text(
        status, message(world, json.loads(body)), {})
    assert _fingerprint(world.env.db) == before


@pytest.mark.parametrize('name', sorted(ACCEPTED))
def test_an_accepted_body_gets_its_answer(world, name):
    case = _case(name)
    status, check = ACCEPTED[name]
    got_status, answer = _send(world, case, case.body(world))
    assert got_status == status, answer
    assert check is None or check(world, answer)
