"""Query string schemas for GET /usages."""

import copy

from placement_lite.schemas import allocations

_EXTERNAL_ID = {'type': 'string', 'minLength': 1, 'maxLength': 255}

USAGES_QUERY_1_9 = {
    'type': 'object',
    'properties': {
        'project_id': dict(_EXTERNAL_ID),
        'user_id': dict(_EXTERNAL_ID),
    },
    'required': ['project_id'],
    'additionalProperties': False,
}

#: From 1.38: ``consumer_type`` filter, a type name, ``all`` or ``unknown``.
USAGES_QUERY_1_38 = copy.deepcopy(USAGES_QUERY_1_9)
USAGES_QUERY_1_38['properties']['consumer_type'] = {
    'type': 'string',
    'pattern': allocations.NAME_PATTERN + '|^all|^unknown$',
    'minLength': 1,
    'maxLength': 255,
}
