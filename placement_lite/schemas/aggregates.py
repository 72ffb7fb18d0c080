"""JSON schemas for PUT /resource_providers/{uuid}/aggregates."""


def _aggregate_list():
    return {
        'type': 'array',
        'items': {'type': 'string', 'format': 'uuid'},
        'uniqueItems': True,
    }


#: Before 1.19 the body is the bare list of aggregate uuids.
SET_AGGREGATES = _aggregate_list()

SET_AGGREGATES_1_19 = {
    'type': 'object',
    'properties': {
        'aggregates': _aggregate_list(),
        'resource_provider_generation': {'type': 'integer'},
    },
    'required': ['aggregates', 'resource_provider_generation'],
    'additionalProperties': False,
}
