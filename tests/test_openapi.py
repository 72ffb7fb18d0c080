"""api-ref/openapi.yaml: a valid OpenAPI 3.1 document, and the one
tests/openapi/document.py makes from the service's request schemas now."""

import importlib
import types

import openapi_spec_validator
import yaml

from tests.openapi import document

_SCHEMA_MODULES = ['aggregates', 'allocation_candidates', 'allocation_claims',
                   'allocations', 'device_profiles', 'inventories',
                   'provider_traits', 'reshaper', 'resource_classes',
                   'resource_providers', 'traits', 'usages']


def _committed():
    with open(document.PATH) as handle:
        return handle.read()


def test_document_is_valid_openapi():
    openapi_spec_validator.validate(yaml.safe_load(_committed()))


def test_document_is_generated_from_the_current_schemas():
    """Fails when a request schema changed and the document did not:
    run ``python -m tests.openapi.document`` and commit the result."""
    assert document.render(document.build()[0]) == _committed()


def _request_schemas():
    """Every schema placement_lite.schemas offers handlers: dicts with a
    type, (version, schema) lists and schema-making functions."""
    found = {}
    for module_name in _SCHEMA_MODULES:
        module = importlib.import_module('placement_lite.schemas.'
                                         + module_name)
        for name, value in vars(module).items():
            if name.startswith('_') or isinstance(value, types.ModuleType):
                continue
            is_schema = isinstance(value, dict) and 'type' in value
            is_versioned = isinstance(value, list) and value and all(
                isinstance(item, tuple) for item in value)
            is_maker = (isinstance(value, types.FunctionType)
                        and value.__module__ == module.__name__
                        and name.endswith('schema'))
            if is_schema or is_versioned or is_maker:
                found['%s.%s' % (module_name, name)] = value
    return found


def test_every_request_schema_is_in_the_document():
    used = document.build()[1]
    missing = [name for name, value in _request_schemas().items()
               if id(value) not in used]
    assert not missing
