"""JSON schemas for /resource_providers: request bodies and query strings.

Validation error messages quote the schema, so the key order of these
dictionaries is part of the API: it matches what clients of the reference
see.
"""


def _uuid():
    return {'type': 'string', 'format': 'uuid'}


def _nullable_uuid():
    return {'anyOf': [_uuid(), {'type': 'null'}]}


def _provider_body(with_uuid, with_parent):
    properties = {'name': {'type': 'string', 'maxLength': 200}}
    if with_uuid:
        properties['uuid'] = _uuid()
    if with_parent:
        properties['parent_provider_uuid'] = _nullable_uuid()
    return {
        'type': 'object',
        'properties': properties,
        'required': ['name'],
        'additionalProperties': False,
    }


CREATE = _provider_body(with_uuid=True, with_parent=False)
CREATE_1_14 = _provider_body(with_uuid=True, with_parent=True)
UPDATE = _provider_body(with_uuid=False, with_parent=False)
UPDATE_1_14 = _provider_body(with_uuid=False, with_parent=True)


def _list_query(min_version):
    """The GET /resource_providers query schema at ``min_version``."""
    properties = {'name': {'type': 'string'}, 'uuid': _uuid()}
    added_in = [
        ((1, 3), 'member_of', {'type': 'string'}),
        ((1, 4), 'resources', {'type': 'string'}),
        ((1, 14), 'in_tree', _uuid()),
        ((1, 18), 'required', {'type': 'string'}),
    ]
    for version, name, schema in added_in:
        if min_version >= version:
            properties[name] = schema
    return {
        'type': 'object',
        'properties': properties,
        'additionalProperties': False,
    }


#: (first microversion, query schema), newest first.
LIST_QUERY = [(version, _list_query(version))
              for version in [(1, 18), (1, 14), (1, 4), (1, 3), (1, 0)]]
