"""JSON schemas of a device profile (POST /device_profiles, from
microversion 1.40; ``alternatives`` from 1.42; a group's ``can_split:``
keys from 1.44).

Keys and values of a group are strings. Names of resource classes and traits
may use lower-case letters and hyphens (the domain normalises them); whether
they exist, and whether the alternatives name groups the profile has, is
checked by the domain, not here.
"""

from placement_lite import microversion

#: Profile names; also the characters allowed in names inside a group.
NAME_PATTERN = '^[a-zA-Z0-9_-]+$'
_NAME_CHARS = '[a-zA-Z0-9_-]{1,255}'
_UUID = {'type': 'string', 'format': 'uuid'}
#: Free-form accel values: the characters the Cyborg spec allows in fields.
_TEXT_VALUE = {'type': 'string', 'pattern': '^[a-zA-Z0-9_:=-]+$',
               'maxLength': 255}

_GROUP = {
    'type': 'object',
    'minProperties': 1,
    'properties': {
        'accel:bitstream_id': _UUID,
        'accel:bitstream_name': _TEXT_VALUE,
        'accel:function_id': _UUID,
        'accel:function_name': _TEXT_VALUE,
        'accel:attach_target': {'type': 'string',
                                'enum': ['VM', 'host', 'none']},
    },
    'patternProperties': {
        '^resources:%s$' % _NAME_CHARS: {
            'type': 'string', 'pattern': '^[1-9][0-9]*$'},
        '^trait:%s$' % _NAME_CHARS: {
            'type': 'string', 'enum': ['required', 'forbidden']},
    },
    'additionalProperties': False,
}

#: Sets of alternatives: each the positions of two or more groups, in
#: priority order.
_ALTERNATIVES = {
    'type': 'array',
    'items': {'type': 'array', 'minItems': 2, 'uniqueItems': True,
              'items': {'type': 'integer', 'minimum': 0}},
}


def group(version):
    """A profile's group at ``version``: from 1.44 it may let classes it
    requests be split (``can_split:<RESOURCE_CLASS>``: ``true``)."""
    if version < microversion.CAN_SPLIT:
        return _GROUP
    return dict(_GROUP, patternProperties=dict(
        _GROUP['patternProperties'], **{
            '^can_split:%s$' % _NAME_CHARS: {'type': 'string',
                                             'enum': ['true']}}))


def _profile(version):
    """The body of POST /device_profiles at ``version``."""
    properties = {
        'name': {'type': 'string', 'pattern': NAME_PATTERN,
                 'maxLength': 255},
        'description': {'type': ['string', 'null'], 'maxLength': 255},
        'groups': {'type': 'array', 'minItems': 1, 'items': group(version)},
    }
    if version >= microversion.PROFILE_ALTERNATIVES:
        properties['alternatives'] = _ALTERNATIVES
    return {
        'type': 'object',
        'properties': properties,
        'required': ['name', 'groups'],
        'additionalProperties': False,
    }


#: (since version, schema), newest first, for POST /device_profiles.
CREATE = microversion.schemas_since(microversion.DEVICE_PROFILES, _profile)
