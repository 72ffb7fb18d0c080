"""JSON schemas for allocation bodies, one per microversion range.

The schemas keep the shape (and so the validation messages) the reference
gives clients:

- 1.0-1.7   ``PUT /allocations/{c}``: a list of ``{resource_provider, resources}``
- 1.8-1.11  the same, plus required ``project_id`` and ``user_id``
- 1.12      a dict keyed by provider uuid; ``POST /allocations`` from 1.13
            takes a dict of such bodies keyed by consumer uuid, where an
            empty ``allocations`` dict removes the consumer's allocations
- 1.28      required ``consumer_generation`` (integer or null); PUT may send
            an empty ``allocations`` dict too
- 1.34      optional ``mappings`` (request group suffix -> provider uuids)
- 1.38      required ``consumer_type``
"""

import copy

from placement_lite import microversion

UUID_PATTERN = '^[0-9a-fA-F-]{36}$'
NAME_PATTERN = '^[A-Z0-9_]+$'
GROUP_SUFFIX_PATTERN = r'[a-zA-Z0-9_-]{1,64}'


def _amounts():
    """{RESOURCE_CLASS: positive integer}, at least one. (No maximum, as in
    the reference, whose validation errors quote this schema: the column's
    bound is checked after it, see handlers.validation.refuse_amounts_beyond_column.)"""
    return {
        'type': 'object',
        'minProperties': 1,
        'patternProperties': {
            NAME_PATTERN: {'type': 'integer', 'minimum': 1},
        },
        'additionalProperties': False,
    }


def _external_id():
    return {'type': 'string', 'minLength': 1, 'maxLength': 255}


def _list_form(with_owner):
    body = {
        'type': 'object',
        'properties': {
            'allocations': {
                'type': 'array',
                'minItems': 1,
                'items': {
                    'type': 'object',
                    'properties': {
                        'resource_provider': {
                            'type': 'object',
                            'properties': {
                                'uuid': {'type': 'string', 'format': 'uuid'},
                            },
                            'additionalProperties': False,
                            'required': ['uuid'],
                        },
                        'resources': _amounts(),
                    },
                    'required': ['resource_provider', 'resources'],
                    'additionalProperties': False,
                },
            },
        },
        'required': ['allocations'],
        'additionalProperties': False,
    }
    if with_owner:
        body['properties']['project_id'] = _external_id()
        body['properties']['user_id'] = _external_id()
        body['required'].extend(['project_id', 'user_id'])
    return body


def _dict_form(min_providers):
    return {
        'type': 'object',
        'properties': {
            'allocations': {
                'type': 'object',
                'minProperties': min_providers,
                'patternProperties': {
                    UUID_PATTERN: {
                        'type': 'object',
                        'properties': {
                            # Accepted and ignored, as by the reference.
                            'generation': {'type': 'integer'},
                            'resources': _amounts(),
                        },
                        'required': ['resources'],
                        'additionalProperties': False,
                    },
                },
                'additionalProperties': False,
            },
            'project_id': _external_id(),
            'user_id': _external_id(),
        },
        'additionalProperties': False,
        'required': ['allocations', 'project_id', 'user_id'],
    }


def _with_generation(body):
    body = copy.deepcopy(body)
    body['properties']['consumer_generation'] = {
        'type': ['integer', 'null'], 'additionalProperties': False}
    body['required'].append('consumer_generation')
    return body


def _with_mappings(body):
    body = copy.deepcopy(body)
    body['properties']['mappings'] = {
        'type': 'object',
        'minProperties': 1,
        'patternProperties': {
            GROUP_SUFFIX_PATTERN: {
                'type': 'array',
                'minItems': 1,
                'items': {'type': 'string', 'format': 'uuid'},
            },
        },
    }
    return body


def _with_consumer_type(body):
    body = copy.deepcopy(body)
    body['properties']['consumer_type'] = {
        'type': 'string', 'pattern': NAME_PATTERN,
        'minLength': 1, 'maxLength': 255}
    body['required'].append('consumer_type')
    return body


def _by_consumer(consumer_body, min_consumers=1):
    """``POST /allocations`` (and the reshaper): bodies keyed by consumer uuid."""
    return {
        'type': 'object',
        'minProperties': min_consumers,
        'additionalProperties': False,
        'patternProperties': {UUID_PATTERN: consumer_body},
    }


_CONSUMER_1_12 = _dict_form(min_providers=1)
_CONSUMER_1_13 = _dict_form(min_providers=0)
_CONSUMER_1_28 = _with_generation(_CONSUMER_1_13)
_CONSUMER_1_34 = _with_mappings(_CONSUMER_1_28)
_CONSUMER_1_38 = _with_consumer_type(_CONSUMER_1_34)

#: (since version, schema), newest first, for PUT /allocations/{consumer_uuid}.
PUT_SCHEMAS = [
    (microversion.CONSUMER_TYPES, _CONSUMER_1_38),
    (microversion.GROUP_MAPPINGS, _CONSUMER_1_34),
    (microversion.CONSUMER_GENERATIONS, _CONSUMER_1_28),
    (microversion.ALLOCATIONS_BY_PROVIDER, _CONSUMER_1_12),
    (microversion.ALLOCATION_OWNERS, _list_form(with_owner=True)),
    (microversion.MINIMUM, _list_form(with_owner=False)),
]

#: (since version, schema), newest first, for POST /allocations.
POST_SCHEMAS = [
    (microversion.CONSUMER_TYPES, _by_consumer(_CONSUMER_1_38)),
    (microversion.GROUP_MAPPINGS, _by_consumer(_CONSUMER_1_34)),
    (microversion.CONSUMER_GENERATIONS, _by_consumer(_CONSUMER_1_28)),
    (microversion.POST_ALLOCATIONS, _by_consumer(_CONSUMER_1_13)),
]


def by_consumer(min_consumers, version_schemas=POST_SCHEMAS):
    """The POST schemas with another lower bound on the number of consumers."""
    result = []
    for version, schema in version_schemas:
        schema = copy.deepcopy(schema)
        schema['minProperties'] = min_consumers
        result.append((version, schema))
    return result
