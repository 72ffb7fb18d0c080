"""Request bodies of the inventory routes.

Validation messages quote the failing schema, so the properties keep the
order clients see from the reference.
"""

from placement_lite.schemas import common


def _bounded_integer(minimum):
    return {'type': 'integer', 'maximum': common.MAX_INT, 'minimum': minimum}


def _inventory(extra_properties=(), required=()):
    properties = {
        'resource_provider_generation': {'type': 'integer'},
        'total': _bounded_integer(1),
        'reserved': _bounded_integer(0),
        'min_unit': _bounded_integer(1),
        'max_unit': _bounded_integer(1),
        'step_size': _bounded_integer(1),
        'allocation_ratio': {'type': 'number',
                             'maximum': common.SQL_FLOAT_MAX},
    }
    properties.update(extra_properties)
    return {
        'type': 'object',
        'properties': properties,
        'required': ['total', *required],
        'additionalProperties': False,
    }


#: PUT /resource_providers/{uuid}/inventories/{resource_class}
UPDATE_ONE = _inventory(required=['resource_provider_generation'])

#: POST /resource_providers/{uuid}/inventories
CREATE_ONE = _inventory(
    extra_properties={'resource_class': {'type': 'string',
                                         'pattern': common.NAME_PATTERN}},
    required=['resource_class'])

#: One entry of the ``inventories`` object of a whole-set replacement.
INVENTORY_RECORD = _inventory()

#: PUT /resource_providers/{uuid}/inventories
REPLACE_ALL = {
    'type': 'object',
    'properties': {
        'resource_provider_generation': {'type': 'integer'},
        'inventories': {
            'type': 'object',
            'patternProperties': {common.NAME_PATTERN: INVENTORY_RECORD},
        },
    },
    'required': ['resource_provider_generation', 'inventories'],
    'additionalProperties': False,
}
