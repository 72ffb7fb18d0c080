"""POST /reshaper bodies: the inventories of some providers (as for
``PUT /resource_providers/{uuid}/inventories``) and the allocations of some
consumers (as for ``POST /allocations`` at the same microversion, possibly
none)."""

from placement_lite import microversion
from placement_lite.schemas import allocations
from placement_lite.schemas import inventories


def _reshaper(allocations_schema):
    return {
        'type': 'object',
        'properties': {
            'inventories': {
                'type': 'object',
                'patternProperties': {
                    allocations.UUID_PATTERN: inventories.REPLACE_ALL,
                },
                'minProperties': 1,
                'additionalProperties': False,
            },
            'allocations': allocations_schema,
        },
        'required': ['inventories', 'allocations'],
        'additionalProperties': False,
    }


#: (since version, schema), newest first: those of POST /allocations in
#: force from 1.30, where the route starts; the oldest is that of 1.28.
SCHEMAS = [(since, _reshaper(schema)) for since, schema in
           allocations.by_consumer(0)
           if since >= microversion.CONSUMER_GENERATIONS]
