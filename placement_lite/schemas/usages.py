"""Query string schemas for GET /usages."""

import copy

from placement_lite import microversion
from placement_lite.schemas import allocations

_EXTERNAL_ID = {'type': 'string', 'minLength': 1, 'maxLength': 255}

_QUERY_1_9 = {
    'type': 'object',
    'properties': {
        'project_id': dict(_EXTERNAL_ID),
        'user_id': dict(_EXTERNAL_ID),
    },
    'required': ['project_id'],
    'additionalProperties': False,
}

#: From 1.38: ``consumer_type`` filter, a type name, ``all`` or ``unknown``.
_QUERY_1_38 = copy.deepcopy(_QUERY_1_9)
_QUERY_1_38['properties']['consumer_type'] = {
    'type': 'string',
    'pattern': allocations.NAME_PATTERN + '|^all|^unknown$',
    'minLength': 1,
    'maxLength': 255,
}

#: (since version, schema), newest first.
USAGES_QUERY = [
    (microversion.CONSUMER_TYPES, _QUERY_1_38),
    (microversion.PROJECT_USAGES, _QUERY_1_9),
]
