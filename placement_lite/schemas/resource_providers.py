"""JSON schemas for /resource_providers: request bodies and query strings.

Validation error messages quote the schema, so the key order of these
dictionaries is part of the API: it matches what clients of the reference
see.
"""

from placement_lite import microversion


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


#: (since version, schema), newest first, for POST /resource_providers.
CREATE = [
    (microversion.NESTED_PROVIDERS,
     _provider_body(with_uuid=True, with_parent=True)),
    (microversion.MINIMUM, _provider_body(with_uuid=True, with_parent=False)),
]
#: (since version, schema), newest first, for PUT /resource_providers/{uuid}.
UPDATE = [
    (microversion.NESTED_PROVIDERS,
     _provider_body(with_uuid=False, with_parent=True)),
    (microversion.MINIMUM, _provider_body(with_uuid=False, with_parent=False)),
]


def _list_query(version):
    """The GET /resource_providers query schema at ``version``."""
    properties = {'name': {'type': 'string'}, 'uuid': _uuid()}
    added_in = [
        (microversion.PROVIDERS_MEMBER_OF, 'member_of', {'type': 'string'}),
        (microversion.PROVIDERS_RESOURCES, 'resources', {'type': 'string'}),
        (microversion.NESTED_PROVIDERS, 'in_tree', _uuid()),
        (microversion.PROVIDERS_REQUIRED, 'required', {'type': 'string'}),
    ]
    for since, name, schema in added_in:
        if version >= since:
            properties[name] = schema
    return {
        'type': 'object',
        'properties': properties,
        'additionalProperties': False,
    }


#: (since version, query schema), newest first.
LIST_QUERY = microversion.schemas_since(microversion.MINIMUM, _list_query)
