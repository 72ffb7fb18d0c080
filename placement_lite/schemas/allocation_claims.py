"""Schemas of POST /allocation_claims (microversion 1.43,
api-ref/extensions.md): the query is that of GET /allocation_candidates
but for ``explain``; the body names the consumers as ``PUT
/allocations`` does at 1.38, without allocations."""

import copy

from placement_lite import microversion
from placement_lite.schemas import allocation_candidates
from placement_lite.schemas import allocations

#: The most consumers one claim may name.
MAX_CONSUMERS = 1000
#: The values of ``trees``: consumers may share trees (the default), each
#: is in a tree of its own (anti-affinity), or all are in trees of one
#: aggregate (affinity).
TREES = ['any', 'distinct', 'same_aggregate']


def _query(version):
    schema = copy.deepcopy(microversion.schema_for(
        version, allocation_candidates.QUERY))
    del schema['properties']['explain']
    return schema


def _consumer():
    """A consumer as PUT /allocations names it at 1.38: project_id,
    user_id, consumer_generation and consumer_type."""
    schema = copy.deepcopy(microversion.schema_for(
        microversion.CONSUMER_TYPES, allocations.PUT_SCHEMAS))
    for name in ('allocations', 'mappings'):
        del schema['properties'][name]
    schema['required'].remove('allocations')
    return schema


_BODY = {
    'type': 'object',
    'properties': {
        'consumers': {
            'type': 'object',
            'minProperties': 1,
            'maxProperties': MAX_CONSUMERS,
            'patternProperties': {allocations.UUID_PATTERN: _consumer()},
            'additionalProperties': False,
        },
        'trees': {'type': 'string', 'enum': TREES},
    },
    'required': ['consumers'],
    'additionalProperties': False,
}

#: (since version, query schema), newest first.
QUERY = microversion.schemas_since(microversion.CLAIMS, _query)
#: (since version, body schema), newest first.
BODY = [(microversion.CLAIMS, _BODY)]
