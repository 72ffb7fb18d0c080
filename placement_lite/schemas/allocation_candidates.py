"""Query string schemas for GET /allocation_candidates, per microversion.

The query is validated as a dict of the last value of each key, as the
reference does, before any parsing.

One function writes the schema at any version rather than one literal per
variant: the variants share most of their keys, in an order 400 messages
show. :data:`QUERY` keeps what it writes as the other schema modules keep
their schemas, (since version, schema) pairs for
:func:`placement_lite.microversion.schema_for`.
"""

from placement_lite import microversion
from placement_lite import querystring

_STRING = {'type': 'string'}


def _query(version):
    """The JSON schema for the query at ``version``."""
    properties = {}
    schema = {'type': 'object', 'properties': properties}
    if version < microversion.GRANULAR_GROUPS:
        properties['resources'] = dict(_STRING)
        schema['required'] = ['resources']
    # Key order shows in the 400 message, which quotes the schema.
    schema['additionalProperties'] = False
    if version >= microversion.CANDIDATES_LIMIT:
        properties['limit'] = {
            'type': ['integer', 'string'],
            'pattern': '^[1-9][0-9]*$',
            'minimum': 1,
            'minLength': 1,
        }
    if (microversion.CANDIDATES_REQUIRED <= version
            < microversion.GRANULAR_GROUPS):
        properties['required'] = {'type': ['string']}
    if (microversion.CANDIDATES_MEMBER_OF <= version
            < microversion.GRANULAR_GROUPS):
        properties['member_of'] = {'type': ['string']}
    if version >= microversion.GRANULAR_GROUPS:
        properties['group_policy'] = {'type': 'string',
                                      'enum': ['none', 'isolate']}
        prefixes = ['resources', 'required', 'member_of']
        if version >= microversion.CANDIDATES_IN_TREE:
            prefixes.append('in_tree')
        suffix = (querystring.NAMED_SUFFIX
                  if version >= microversion.NAMED_GROUP_SUFFIXES
                  else querystring.NUMBERED_SUFFIX)
        schema['patternProperties'] = {
            '^%s(%s)?$' % (prefix, suffix): dict(_STRING)
            for prefix in prefixes}
    if version >= microversion.ROOT_REQUIRED:
        properties['root_required'] = {'type': ['string']}
    if version >= microversion.SAME_SUBTREE:
        properties['same_subtree'] = {'type': ['string']}
    if version >= microversion.DEVICE_PROFILES:
        # placement_lite's extension: one device profile, expanded into
        # granular groups before parsing (domain.device_profiles).
        properties['device_profile'] = dict(_STRING)
    if version >= microversion.EXPLAIN:
        # placement_lite's extensions (api-ref/extensions.md): isolation of
        # named groups, the root's aggregates, explain.
        properties['group_policy'] = {
            'type': 'string',
            'pattern': '^(none|isolate|%s.+)$'
                       % querystring.ISOLATE_NAMED}
        properties['root_member_of'] = dict(_STRING)
        properties['explain'] = dict(_STRING)
    if version >= microversion.RANKED:
        # placement_lite's ranking (api-ref/extensions.md, 1.42).
        properties['rank_by'] = dict(_STRING)
        properties['root_preferred'] = dict(_STRING)
        properties['alternatives'] = dict(_STRING)
        schema['patternProperties']['^preferred(%s)?$' % (
            querystring.NAMED_SUFFIX)] = dict(_STRING)
    if version >= microversion.CAN_SPLIT:
        # placement_lite's can_split (api-ref/extensions.md, 1.44).
        schema['patternProperties']['^can_split(%s)?$' % (
            querystring.NAMED_SUFFIX)] = dict(_STRING)
    return schema


#: (since version, query schema), newest first.
QUERY = microversion.schemas_since(microversion.ALLOCATION_CANDIDATES, _query)
