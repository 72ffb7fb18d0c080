"""schema_errors.Checker reports the error jsonschema's best match gives,
for every schema of placement_lite, on bodies hypothesis builds near each
schema (valid ones, and ones wrong in one place or in many)."""

import re

from hypothesis import HealthCheck
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
import jsonschema
from jsonschema import _utils
import pytest

from placement_lite import schema_errors
from placement_lite.handlers import validation
from tests.unit import test_schemas

UUID = 'a6d0b6c2-0f36-4dbe-8d06-9f1a3f1f0a01'
#: Keys tried against patterns and property names: some match, some not.
KEYS = ['VCPU', 'A', 'CUSTOM_X', 'a', '', 'VCPU\n', UUID, UUID.upper(),
        UUID.replace('-', ''), 'x' * 36, '1', 'resources', 'total',
        'allocations', 'name', 'in:' + UUID, '_s']
SCALARS = st.one_of(
    st.sampled_from([None, True, False, 0, 1, -1, 1.0, 1.5, 2 ** 31 - 1,
                     2 ** 31, 3.5e38, '', 'x', 'VCPU', UUID, '{%s}' % UUID,
                     'urn:uuid:' + UUID, 'not-a-uuid', 'a' * 256,
                     'required', 'isolate', 'VM', float('nan')]),
    st.integers(), st.text(max_size=5))
ANY = st.recursive(SCALARS, lambda children: st.one_of(
    st.lists(children, max_size=3),
    st.dictionaries(st.sampled_from(KEYS), children, max_size=3)),
    max_leaves=6)


def near(schema):
    """Values close to ``schema``: mostly of its shape, now and then not."""
    return st.one_of(_shaped(schema), ANY) if isinstance(schema, dict) else ANY


def _shaped(schema):
    if 'anyOf' in schema:
        return st.one_of(*map(near, schema['anyOf']))
    types = schema.get('type', [])
    types = [types] if isinstance(types, str) else types
    if 'object' in types or 'properties' in schema:
        return _objects(schema)
    if 'array' in types:
        return st.lists(near(schema.get('items', {})), max_size=4)
    if 'enum' in schema:
        return st.one_of(st.sampled_from(schema['enum']), SCALARS)
    return SCALARS


def _objects(schema):
    named = schema.get('properties', {})
    patterns = schema.get('patternProperties', {})
    fields = {name: near(subschema) for name, subschema in named.items()}

    @st.composite
    def build(draw):
        value = {}
        for name in draw(st.lists(st.sampled_from(sorted(named) or ['x']),
                                  unique=True)):
            value[name] = draw(fields.get(name, ANY))
        for key in draw(st.lists(st.sampled_from(KEYS), max_size=4,
                                 unique=True)):
            matching = [subschema for pattern, subschema in patterns.items()
                        if re.search(pattern, key)]
            value[key] = draw(near(matching[0]) if matching else ANY)
        return value
    return build()


SCHEMAS = test_schemas.SCHEMAS


def jsonschema_best_match(schema, format_checker, instance):
    validator = schema_errors.Validator(schema, format_checker=format_checker)
    return jsonschema.exceptions.best_match(validator.iter_errors(instance))


@pytest.mark.parametrize('name,schema', SCHEMAS,
                         ids=[name for name, _schema in SCHEMAS])
def test_same_error_as_jsonschema(name, schema):
    checker = schema_errors.Checker(schema, validation._BODY_FORMATS)

    @settings(max_examples=60, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(near(schema))
    def check(instance):
        expected = jsonschema_best_match(schema, validation._BODY_FORMATS,
                                         instance)
        found = checker.best_error(instance)
        assert str(found) == str(expected)
        if expected is not None:
            assert schema_errors.describe(found) == str(expected)
            assert list(found.path) == list(expected.path)
            assert list(found.schema_path) == list(expected.schema_path)

    check()


def test_bulk_entries_wrong_everywhere():
    """The error of the greatest key, among many entries all wrong."""
    schema = {'type': 'object', 'patternProperties': {
        '^[A-Z]+$': {'type': 'object', 'required': ['total']}}}
    instance = {key: value for key in ('B', 'A', 'C')
                for value in [{} if key != 'C' else 0]}
    assert str(schema_errors.Checker(schema).best_error(instance)) == str(
        jsonschema_best_match(schema, None, instance))


def test_unsupported_keyword_is_refused():
    with pytest.raises(ValueError):
        schema_errors.Checker({'type': 'object', 'oneOf': [{}]})


@pytest.mark.slow
@settings(max_examples=1000, deadline=None, database=None)
@given(st.lists(ANY, max_size=6))
def test_uniqueness_as_jsonschema_finds_it(items):
    assert schema_errors.all_unique(items) == _utils.uniq(items)
