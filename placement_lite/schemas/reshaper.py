"""POST /reshaper bodies: the inventories of some providers (as for
``PUT /resource_providers/{uuid}/inventories``) and the allocations of some
consumers (as for ``POST /allocations`` at the same microversion, possibly
none)."""

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


#: (lowest microversion, schema), newest first; the route starts at 1.30.
SCHEMAS = [(version, _reshaper(schema)) for version, schema in
           allocations.by_consumer(0)
           if version in ('1.38', '1.34', '1.28')]
