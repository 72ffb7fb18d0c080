"""JSON schemas for PUT /resource_providers/{uuid}/aggregates."""

from placement_lite import microversion


def _aggregate_list():
    return {
        'type': 'array',
        'items': {'type': 'string', 'format': 'uuid'},
        'uniqueItems': True,
    }


#: (since version, schema), newest first: before 1.19 the body is the bare
#: list of aggregate uuids.
SET_AGGREGATES = [
    (microversion.AGGREGATES_GENERATION, {
        'type': 'object',
        'properties': {
            'aggregates': _aggregate_list(),
            'resource_provider_generation': {'type': 'integer'},
        },
        'required': ['aggregates', 'resource_provider_generation'],
        'additionalProperties': False,
    }),
    (microversion.PROVIDER_AGGREGATES, _aggregate_list()),
]
