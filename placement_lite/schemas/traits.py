"""Trait names and the query of the trait list."""

from placement_lite.schemas import common

#: A name for PUT /traits/{name}.
CUSTOM_TRAIT = {
    'type': 'string',
    'minLength': 1,
    'maxLength': 255,
    'pattern': common.CUSTOM_NAME_PATTERN,
}

#: GET /traits query parameters.
LIST_QUERY = {
    'type': 'object',
    'properties': {
        'name': {'type': 'string'},
        'associated': {'type': 'string'},
    },
    'additionalProperties': False,
}
