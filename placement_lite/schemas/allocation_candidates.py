"""Query string schemas for GET /allocation_candidates, per microversion.

The query is validated as a dict of the last value of each key, as the
reference does, before any parsing.
"""

from placement_lite import microversion
from placement_lite.engine import request as candidate_request

_STRING = {'type': 'string'}


def query_schema(version):
    """The JSON schema for the query at ``version`` (a (major, minor) tuple)."""
    properties = {}
    schema = {'type': 'object', 'properties': properties}
    if version < (1, 25):
        properties['resources'] = dict(_STRING)
        schema['required'] = ['resources']
    # Key order shows in the 400 message, which quotes the schema.
    schema['additionalProperties'] = False
    if version >= (1, 16):
        properties['limit'] = {
            'type': ['integer', 'string'],
            'pattern': '^[1-9][0-9]*$',
            'minimum': 1,
            'minLength': 1,
        }
    if (1, 17) <= version < (1, 25):
        properties['required'] = {'type': ['string']}
    if (1, 21) <= version < (1, 25):
        properties['member_of'] = {'type': ['string']}
    if version >= (1, 25):
        properties['group_policy'] = {'type': 'string',
                                      'enum': ['none', 'isolate']}
        prefixes = ['resources', 'required', 'member_of']
        if version >= (1, 31):
            prefixes.append('in_tree')
        suffix = (candidate_request.NAMED_SUFFIX if version >= (1, 33)
                  else candidate_request.NUMBERED_SUFFIX)
        schema['patternProperties'] = {
            '^%s(%s)?$' % (prefix, suffix): dict(_STRING)
            for prefix in prefixes}
    if version >= (1, 35):
        properties['root_required'] = {'type': ['string']}
    if version >= (1, 36):
        properties['same_subtree'] = {'type': ['string']}
    if version >= microversion.parse(microversion.DEVICE_PROFILES):
        # placement_lite's extension: one device profile, expanded into
        # granular groups before parsing (domain.device_profiles).
        properties['device_profile'] = dict(_STRING)
    if version >= microversion.parse(microversion.EXPLAIN):
        # placement_lite's extensions (api-ref/extensions.md): isolation of
        # named groups, the root's aggregates, explain.
        properties['group_policy'] = {
            'type': 'string',
            'pattern': '^(none|isolate|%s.+)$'
                       % candidate_request.ISOLATE_NAMED}
        properties['root_member_of'] = dict(_STRING)
        properties['explain'] = dict(_STRING)
    return schema

