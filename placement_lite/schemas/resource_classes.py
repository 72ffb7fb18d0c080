"""Request bodies of the resource class routes."""

from placement_lite.schemas import common

#: POST /resource_classes, and PUT /resource_classes/{name} before 1.7
#: (where it names the class's new name); from 1.7 the path's name is
#: checked against it.
RESOURCE_CLASS = {
    'type': 'object',
    'properties': {
        'name': {
            'type': 'string',
            'pattern': common.CUSTOM_NAME_PATTERN,
            'maxLength': 255,
        },
    },
    'required': ['name'],
    'additionalProperties': False,
}
