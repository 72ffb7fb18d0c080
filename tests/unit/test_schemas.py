"""Request schemas are valid, and validating against them answers as
jsonschema.validate does (the handlers skip its per-call schema check)."""

import importlib
import pkgutil

import jsonschema
import pytest

from placement_lite import schemas
from placement_lite.handlers import validation


def _schemas_in(value):
    """Every schema (a dict with a type or a combinator) in a module value."""
    if isinstance(value, dict):
        if {'type', 'anyOf', 'oneOf', 'allOf'} & set(value):
            yield value
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _schemas_in(item)


def _all_schemas():
    found = []
    for module_info in pkgutil.iter_modules(schemas.__path__):
        module = importlib.import_module(
            'placement_lite.schemas.' + module_info.name)
        for name, value in vars(module).items():
            if not name.startswith('__'):
                found.extend(('%s.%s' % (module_info.name, name), schema)
                             for schema in _schemas_in(value))
    return found


SCHEMAS = _all_schemas()


def test_schemas_were_found():
    assert len(SCHEMAS) > 3


@pytest.mark.parametrize('name,schema', SCHEMAS,
                         ids=[name for name, _schema in SCHEMAS])
def test_schema_is_valid(name, schema):
    jsonschema.validators.validator_for(schema).check_schema(schema)


CASES = [
    ({'name': 'x', 'uuid': 'not-a-uuid'}),
    ({'uuid': 5, 'extra': True}),
    ({'name': 'x' * 300}),
    ({'name': 'fine'}),
]


@pytest.mark.parametrize('data', CASES)
def test_same_error_as_jsonschema_validate(data):
    schema = {'type': 'object',
              'properties': {'name': {'type': 'string', 'maxLength': 200},
                             'uuid': {'type': 'string', 'format': 'uuid'}},
              'required': ['name'], 'additionalProperties': False}
    checker = jsonschema.FormatChecker()
    try:
        jsonschema.validate(data, schema, format_checker=checker)
        expected = None
    except jsonschema.ValidationError as exc:
        expected = str(exc)
    error = validation.schema_error(data, schema, checker)
    assert (str(error) if error is not None else None) == expected
