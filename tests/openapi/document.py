"""Build api-ref/openapi.yaml: the OpenAPI 3.1 description of the service.

Request bodies and query parameters are the service's own JSON schemas
(placement_lite.schemas), copied in as they are; routes, path parameters,
responses and the microversion history are written here. The committed
document is this module's output: tests/test_openapi.py regenerates it and
fails when the two differ, so a schema cannot change without the document.

    python -m tests.openapi.document        # rewrite api-ref/openapi.yaml

Shapes that change with the microversion are ``anyOf`` lists whose members
say, in their ``description``, the versions they apply to (``anyOf`` rather
than ``oneOf``: an empty list or object fits several of them). Each
operation lists its changes in ``x-openstack-microversions``.
"""

import copy
import os

import yaml

from placement_lite import microversion
from placement_lite import querystring
from placement_lite.schemas import aggregates
from placement_lite.schemas import allocation_claims
from placement_lite.schemas import allocation_candidates
from placement_lite.schemas import allocations
from placement_lite.schemas import common
from placement_lite.schemas import device_profiles
from placement_lite.schemas import inventories
from placement_lite.schemas import provider_traits
from placement_lite.schemas import reshaper
from placement_lite.schemas import resource_classes
from placement_lite.schemas import resource_providers
from placement_lite.schemas import traits
from placement_lite.schemas import usages

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), os.pardir,
                                    os.pardir))
PATH = os.path.join(REPO, 'api-ref', 'openapi.yaml')
MAX_VERSION = microversion.EXTENSION_MAXIMUM
#: placement_lite's own microversions ('1.40', ...).
_EXTENSION_VERSIONS = microversion.versions(True)[
    len(microversion.versions(False)):]

#: Tags, in page order: (tag, page file name, title).
TAGS = [
    ('versions', 'versions', 'API versions'),
    ('providers', 'providers', 'Resource providers'),
    ('inventories', 'inventories', 'Inventories'),
    ('classes', 'resource_classes', 'Resource classes'),
    ('traits', 'traits', 'Traits'),
    ('aggregates', 'aggregates', 'Aggregates'),
    ('allocations', 'allocations', 'Allocations'),
    ('usages', 'usages', 'Usages'),
    ('reshaper', 'reshaper', 'Reshaper'),
    ('candidates', 'allocation_candidates', 'Allocation candidates'),
    ('device profiles', 'device_profiles', 'Device profiles'),
]


class _Schemas:
    """The request schemas the document uses, as named components.

    ``use`` copies a schema from placement_lite.schemas into
    ``components/schemas`` and answers a reference to it; ``used`` keeps
    the identity of every object taken, so a test can tell when a schema
    of the service is missing from the document.
    """

    def __init__(self):
        self.components = {}
        self.used = set()

    def use(self, name, schema, description=None):
        self.used.add(id(schema))
        copied = copy.deepcopy(schema)
        if description:
            copied = dict(description=description, **copied)
        self.components[name] = copied
        return {'$ref': '#/components/schemas/%s' % name}

    def versioned(self, name, version_schemas, max_version=MAX_VERSION):
        """anyOf one component per entry of a (since version, schema)
        list, newest first, as placement_lite.schemas keeps them."""
        self.used.add(id(version_schemas))
        variants = []
        upper = max_version
        for since, schema in version_schemas:
            variants.append(self.use(
                '%s_%d_%d' % (name, since.major, since.minor), schema,
                _range(since, upper)))
            upper = microversion.Version(since.major, since.minor - 1)
        return {'anyOf': variants}


def _range(lowest, highest):
    if lowest == highest:
        return 'Microversion %s.' % (lowest,)
    return 'Microversions %s to %s.' % (lowest, highest)


def _ref(kind, name):
    return {'$ref': '#/components/%s/%s' % (kind, name)}


def _variants(*pairs):
    """anyOf (description, schema) pairs."""
    return {'anyOf': [dict(description=description, **schema)
                      for description, schema in pairs]}


def _object(properties, required=None, additional=False):
    result = {'type': 'object', 'properties': properties,
              'required': list(properties) if required is None else required}
    if additional is not None:
        result['additionalProperties'] = additional
    return result


def _array(items):
    return {'type': 'array', 'items': items}


def _map(values, names=None):
    """An object of ``values`` keyed by names matching ``names``."""
    if names is None:
        return {'type': 'object', 'additionalProperties': values}
    return {'type': 'object', 'patternProperties': {names: values},
            'additionalProperties': False}


_UUID = {'type': 'string', 'format': 'uuid'}
_INT = {'type': 'integer'}
_STR = {'type': 'string'}
_NAME = common.NAME_PATTERN
_UUID_KEY = allocations.UUID_PATTERN
_AMOUNTS = _map(_INT, _NAME)


def _response_schemas():
    """Response bodies, written here (the service has no schema for them)."""
    link = _object({'rel': _STR, 'href': _STR})
    provider_fields = {'uuid': _UUID, 'name': _STR, 'generation': _INT,
                       'links': {'type': 'array', 'items': link}}
    provider_tree = dict(provider_fields,
                         parent_provider_uuid={'type': ['string', 'null'],
                                               'format': 'uuid'},
                         root_provider_uuid=_UUID)
    inventory = _object({field: _INT for field in (
        'total', 'reserved', 'min_unit', 'max_unit', 'step_size')})
    inventory['properties']['allocation_ratio'] = {'type': 'number'}
    inventory['required'].append('allocation_ratio')
    profile_fields = {
        'uuid': _UUID, 'name': _STR,
        'description': {'type': ['string', 'null']},
        'groups': {'type': 'array', 'items': _map(_STR)},
        'alternatives': dict(_array(_array(_INT)), description=(
            'From microversion 1.42: sets of alternatives, each the '
            'positions of its groups in priority order.')),
        'created_at': {'type': ['string', 'null'], 'format': 'date-time'},
        'updated_at': {'type': ['string', 'null'], 'format': 'date-time'},
        'links': {'type': 'array', 'items': link}}
    profile = _object(profile_fields, required=[
        name for name in profile_fields if name != 'alternatives'])
    summary_resources = _map(_object({'capacity': _INT, 'used': _INT}), _NAME)
    trait_list = _array(_STR)
    by_type = dict(_AMOUNTS, properties={'consumer_count': _INT},
                   required=['consumer_count'])
    # Aggregates are answered as the client wrote them (any uuid spelling).
    aggregate_list = _array(_STR)
    listed_request = _object({'allocations': _array(_object({
        'resource_provider': _object({'uuid': _UUID}),
        'resources': _AMOUNTS}))})
    keyed_request = _object({
        'allocations': _map(_object({'resources': _AMOUNTS}), _UUID_KEY),
        'mappings': _map(_array(_UUID))}, required=['allocations'])
    summary = _object({
        'resources': summary_resources,
        'traits': trait_list,
        'parent_provider_uuid': {'type': ['string', 'null'],
                                 'format': 'uuid'},
        'root_provider_uuid': _UUID}, required=['resources'])
    explain = _explain_schema()
    error = _object({
        'status': _INT, 'title': _STR, 'detail': _STR,
        'code': dict(_STR, description='From microversion 1.23.'),
        'request_id': _STR,
        'min_version': dict(_STR, description=(
            'In a 406 for an unsupported microversion.')),
        'max_version': _STR,
    }, required=['status', 'title', 'detail'])
    return {
        'Error': _object({'errors': {
            'type': 'array', 'minItems': 1, 'items': error}}),
        'AuthError': {'anyOf': [
            dict(_object({'message': _STR, 'code': _STR, 'title': _STR}),
                 description='noauth2.'),
            dict(_object({'error': _object({
                'code': _INT, 'title': _STR, 'message': _STR})}),
                 description='keystone.')]},
        'Link': link,
        'Versions': _object({'versions': {'type': 'array', 'items': _object({
            'id': _STR, 'max_version': _STR, 'min_version': _STR,
            'status': _STR, 'links': {'type': 'array', 'items': link}})}}),
        'Provider': _variants(
            ('Microversions 1.0 to 1.13.', _object(provider_fields)),
            ('From microversion 1.14.', _object(provider_tree))),
        'Providers': _object({'resource_providers': {
            'type': 'array', 'items': _ref('schemas', 'Provider')}}),
        'Inventory': inventory,
        'ProviderInventory': _object(dict(
            inventory['properties'], resource_provider_generation=_INT)),
        'ProviderInventories': _object({
            'resource_provider_generation': _INT,
            'inventories': _map(_ref('schemas', 'Inventory'), _NAME)}),
        'ProviderAggregates': _variants(
            ('Microversions 1.1 to 1.18.',
             _object({'aggregates': aggregate_list})),
            ('From microversion 1.19.',
             _object({'aggregates': aggregate_list,
                      'resource_provider_generation': _INT}))),
        'ProviderTraits': _object({'traits': trait_list,
                                   'resource_provider_generation': _INT}),
        'ProviderUsages': _object({'resource_provider_generation': _INT,
                                   'usages': _AMOUNTS}),
        'ProjectUsages': _variants(
            ('Microversions 1.9 to 1.37: used amounts by resource class.',
             _object({'usages': _AMOUNTS})),
            ('From microversion 1.38: by consumer type, each with its '
             'consumer_count.',
             _object({'usages': _map(by_type)}))),
        'ProviderAllocations': _object({
            'resource_provider_generation': _INT,
            'allocations': _map(_object(
                {'resources': _AMOUNTS,
                 'consumer_generation': dict(
                     _INT, description='From microversion 1.28.')},
                required=['resources']), _UUID_KEY)}),
        'ConsumerAllocations': _object({
            'allocations': _map(_object({'resources': _AMOUNTS,
                                         'generation': _INT}), _UUID_KEY),
            'project_id': dict(_STR, description=(
                'From microversion 1.12, when the consumer exists.')),
            'user_id': _STR,
            'consumer_generation': dict(_INT, description=(
                'From microversion 1.28, when the consumer exists.')),
            'consumer_type': dict(_STR, description=(
                'From microversion 1.38, when the consumer exists.')),
        }, required=['allocations']),
        'ResourceClass': _object({'name': _STR, 'links': {
            'type': 'array', 'items': link}}),
        'ResourceClasses': _object({'resource_classes': {
            'type': 'array', 'items': _ref('schemas', 'ResourceClass')}}),
        'Traits': _object({'traits': trait_list}),
        'AllocationCandidates': _variants(
            ('Microversions 1.10 and 1.11: allocation requests are lists; '
             'summaries hold only the requested resource classes.',
             _object({'allocation_requests': _array(listed_request),
                      'provider_summaries': _map(_object(
                          {'resources': summary_resources}), _UUID_KEY)})),
            ('From microversion 1.12: allocation requests keyed by provider '
             'uuid (with mappings from 1.34); summaries with traits from '
             '1.17, every resource class from 1.27, parent and root from '
             '1.29; explain from 1.41 (placement_lite), when asked (with '
             'its ranking from 1.42).',
             _object({'allocation_requests': _array(keyed_request),
                      'provider_summaries': _map(summary, _UUID_KEY),
                      'explain': _ref('schemas', 'Explain')},
                     required=['allocation_requests',
                               'provider_summaries']))),
        'Explain': explain,
        'AllocationClaims': _object({
            'claims': _map(_object({
                'allocations': _map(_object({'resources': _AMOUNTS}),
                                    _UUID_KEY),
                'mappings': _map(_array(_UUID)),
                'consumer_generation': _INT}), _UUID_KEY),
            'refused': dict(_INT, minimum=0, description=(
                'Candidates tried and refused at commit (taken by '
                'concurrent writers, or by the batch itself) before '
                'those claimed.'))}),
        'DeviceProfile': profile,
        'DeviceProfileDocument': _object({
            'device_profile': _ref('schemas', 'DeviceProfile')}),
        'DeviceProfiles': _object({'device_profiles': {
            'type': 'array', 'items': _ref('schemas', 'DeviceProfile')}}),
    }


def _explain_schema():
    """The ``explain`` member of allocation candidates (1.41,
    api-ref/extensions.md)."""
    optional_int = dict(_INT, minimum=0)
    step = _object({'step': _STR, 'resource_class': _STR,
                    'amount': optional_int, 'largest': optional_int,
                    'providers': optional_int, 'trees': optional_int},
                   required=['step'])
    nullable_step = {'anyOf': [step, {'type': 'null'}]}
    exclusion = _object(dict({'step': _STR, 'resource_class': _STR}, **{
        name: optional_int for name in (
            'amount', 'capacity', 'used', 'min_unit', 'max_unit',
            'step_size', 'largest')}), required=['step'])
    row = _object({'uuid': _UUID, 'resource_class': _STR,
                   'excluded_by': {'anyOf': [exclusion, {'type': 'null'}]}},
                  required=['uuid', 'excluded_by'])
    group = _object({'suffix': _STR, 'steps': _array(step),
                     'emptied_by': nullable_step,
                     'providers': dict(_array(row), description=(
                         'With explain=<provider uuid>.'))},
                    required=['suffix', 'steps', 'emptied_by'])
    skipped = _object({'alternatives': _array(_STR), 'step': _STR,
                       'group': _STR}, required=['alternatives', 'step'])
    key = _object({
        'alternatives': _array(_STR), 'preferred': optional_int,
        'round': optional_int, 'free': _map(_INT), 'tree': _UUID,
        'index': optional_int, 'skipped': _array(skipped)},
        required=['alternatives', 'preferred', 'round', 'free', 'tree',
                  'index', 'skipped'])
    ranking = dict(_object({
        'key': _array(_STR), 'walked': optional_int,
        'candidates': _array(key)}, required=['key', 'walked', 'candidates']),
        description='Ranked requests (1.42): the terms of the rank key and '
                    "each returned candidate's.")
    return dict(_object({
        'groups': _array(group),
        'trees': _object({'steps': _array(step),
                          'emptied_by': nullable_step}),
        'windows': {'type': ['integer', 'null'], 'minimum': 1},
        'walked': optional_int,
        'provider': {'type': ['string', 'null'], 'format': 'uuid'},
        'ranking': ranking}, required=['groups', 'trees', 'windows',
                                       'walked', 'provider']),
        description=('Why the request found what it found: what each '
                     'step of the search kept (api-ref/extensions.md).'))


def _json(schema_name, description='OK', headers=()):
    response = {'description': description,
                'content': {'application/json': {
                    'schema': _ref('schemas', schema_name)}}}
    if headers:
        response['headers'] = {name: _ref('headers', name)
                               for name in headers}
    return response


def _empty(description, headers=()):
    response = {'description': description}
    if headers:
        response['headers'] = {name: _ref('headers', name)
                               for name in headers}
    return response


#: Error statuses every operation can answer: a malformed microversion
#: (400), no or a refused token (401, 403), a route absent at the requested
#: microversion or an unknown item (404), an unsupported microversion or
#: Accept (406), the database unreachable (503).
_COMMON_ERRORS = ['400', '401', '403', '404', '406', '503']
#: Writes may conflict (409: generations, names in use, items in use).
_WRITE_ERRORS = ['409']
#: Writes with a body refuse other media types than JSON (415).
_BODY_ERRORS = ['409', '415']


class Builder:
    def __init__(self):
        self.schemas = _Schemas()
        self.paths = {}

    def op(self, method, path, tag, summary, history, responses,
           body=None, query=(), path_params=None, description=None,
           errors=None):
        """Add one operation.

        ``history``: (microversion, change) pairs, the first the version
        the operation appeared at. ``responses``: {status: response}.
        ``query``: parameter objects. ``path_params``: {name: (schema,
        description)} for the path's parameters (uuid when not given).
        """
        path_params = path_params or {}
        parameters = []
        for name in _path_names(path):
            schema, text = path_params.get(
                name, (_UUID, 'The uuid of the resource provider.'))
            parameters.append({'name': name, 'in': 'path', 'required': True,
                               'description': text, 'schema': schema})
        parameters.extend(query)
        parameters.append(_ref('parameters', 'OpenStackApiVersion'))
        operation = {
            'tags': [tag],
            'summary': summary,
            'operationId': '%s %s' % (method.upper(), path),
        }
        if description:
            operation['description'] = description
        operation['x-openstack-microversions'] = [
            {'version': version, 'change': change}
            for version, change in history]
        operation['parameters'] = parameters
        if body is not None:
            operation['requestBody'] = {'required': True, 'content': {
                'application/json': {'schema': body}}}
        if errors is None:
            errors = _COMMON_ERRORS + (
                [] if method == 'get' else
                _BODY_ERRORS if body is not None else _WRITE_ERRORS)
        all_responses = dict(responses)
        for status in sorted(errors):
            all_responses.setdefault(status, _ref(
                'responses', 'Unauthorized' if status == '401' else 'Error'))
        operation['responses'] = dict(sorted(all_responses.items()))
        self.paths.setdefault(path, {})[method] = operation


def _path_names(path):
    return [part[1:-1] for part in path.split('/') if part.startswith('{')]


def _query(name, schema, description, required=False):
    parameter = {'name': name, 'in': 'query', 'description': description,
                 'schema': copy.deepcopy(schema)}
    if required:
        parameter['required'] = True
    return parameter


_LAST_MODIFIED = ('Last-Modified', 'Cache-Control')
_PROVIDER_LOCATION = ('Location',) + _LAST_MODIFIED


def _providers(b):
    s = b.schemas
    b.op('get', '/', 'versions', 'List API versions',
         [('1.0', 'The version document.')],
         {'200': _json('Versions', headers=_LAST_MODIFIED)},
         errors=['400', '406'],
         description='Needs no token: the one route open to everyone.')
    query = resource_providers.LIST_QUERY
    s.used.add(id(query))
    latest = query[0][1]['properties']
    added = {'member_of': '1.3', 'resources': '1.4', 'in_tree': '1.14',
             'required': '1.18'}
    text = {
        'name': 'Providers with this name.',
        'uuid': 'The provider with this uuid.',
        'member_of': ('Providers in one of these aggregates: '
                      '``in:uuid1,uuid2`` or one uuid; repeatable from '
                      '1.24 (all must hold); ``!`` forbids from 1.32.'),
        'resources': ('Providers with capacity for these amounts: '
                      '``VCPU:2,MEMORY_MB:1024``.'),
        'in_tree': 'Providers in the tree of this provider.',
        'required': ('Providers with these traits, comma separated; '
                     '``!TRAIT`` forbids from 1.22, ``in:A,B`` any of from '
                     '1.39; repeatable from 1.39.'),
    }
    params = [_query(name, schema, text[name] + (
        ' From microversion %s.' % added[name] if name in added else ''))
        for name, schema in latest.items()]
    b.op('get', '/resource_providers', 'providers', 'List resource providers',
         [('1.0', 'Filters name and uuid.'),
          ('1.3', 'Filter member_of.'), ('1.4', 'Filter resources.'),
          ('1.11', 'Link to the allocations of each provider.'),
          ('1.14', 'Filter in_tree; parent_provider_uuid and '
                   'root_provider_uuid in each provider.'),
          ('1.15', 'Last-Modified and Cache-Control headers.'),
          ('1.18', 'Filter required.'),
          ('1.22', 'Forbidden traits in required.'),
          ('1.24', 'member_of repeatable.'),
          ('1.32', 'Forbidden aggregates in member_of.'),
          ('1.39', 'required repeatable and with in:.')],
         {'200': _json('Providers', headers=_LAST_MODIFIED)}, query=params)
    b.op('post', '/resource_providers', 'providers',
         'Create a resource provider',
         [('1.0', '201 without a body.'),
          ('1.14', 'parent_provider_uuid in the body.'),
          ('1.20', '200 with the provider in the body.')],
         {'201': _empty('Created (before microversion 1.20).',
                        headers=['Location']),
          '200': _json('Provider', 'Created (from microversion 1.20).',
                       headers=_PROVIDER_LOCATION)},
         body=s.versioned('ProviderCreate', resource_providers.CREATE))
    b.op('get', '/resource_providers/{uuid}', 'providers',
         'Show a resource provider',
         [('1.0', 'The provider.'), ('1.14', 'Parent and root.'),
          ('1.15', 'Last-Modified and Cache-Control headers.')],
         {'200': _json('Provider', headers=_LAST_MODIFIED)})
    b.op('put', '/resource_providers/{uuid}', 'providers',
         'Update a resource provider',
         [('1.0', 'Renames the provider.'),
          ('1.14', 'Sets parent_provider_uuid once.'),
          ('1.37', 'Moves a provider to another parent or to the root.')],
         {'200': _json('Provider', headers=_LAST_MODIFIED)},
         body=s.versioned('ProviderUpdate', resource_providers.UPDATE))
    b.op('delete', '/resource_providers/{uuid}', 'providers',
         'Delete a resource provider',
         [('1.0', 'Refused (409) while it has allocations or children.')],
         {'204': _empty('Deleted.')})


def _inventories(b):
    s = b.schemas
    class_param = {'resource_class': (
        {'type': 'string'}, 'The name of a resource class.')}
    b.op('get', '/resource_providers/{uuid}/inventories', 'inventories',
         "List a provider's inventories",
         [('1.0', 'Every inventory with the provider generation.')],
         {'200': _json('ProviderInventories', headers=_LAST_MODIFIED)})
    b.op('post', '/resource_providers/{uuid}/inventories', 'inventories',
         'Create one inventory',
         [('1.0', 'Adds one inventory.'),
          ('1.26', 'reserved may equal total.')],
         {'201': _json('ProviderInventory', 'Created.',
                       headers=('Location',) + _LAST_MODIFIED)},
         body=s.use('InventoryCreate', inventories.CREATE_ONE))
    b.op('put', '/resource_providers/{uuid}/inventories', 'inventories',
         "Replace all of a provider's inventories",
         [('1.0', 'Replaces the set.'),
          ('1.26', 'reserved may equal total.')],
         {'200': _json('ProviderInventories', headers=_LAST_MODIFIED)},
         body=s.use('InventoriesReplace', inventories.REPLACE_ALL))
    s.used.add(id(inventories.INVENTORY_RECORD))
    b.op('delete', '/resource_providers/{uuid}/inventories', 'inventories',
         "Delete all of a provider's inventories",
         [('1.5', 'Added (405 before).')],
         {'204': _empty('Deleted.'),
          '405': _ref('responses', 'Error')})
    b.op('get', '/resource_providers/{uuid}/inventories/{resource_class}',
         'inventories', 'Show one inventory',
         [('1.0', 'The inventory with the provider generation.')],
         {'200': _json('ProviderInventory', headers=_LAST_MODIFIED)},
         path_params=class_param)
    b.op('put', '/resource_providers/{uuid}/inventories/{resource_class}',
         'inventories', 'Update one inventory',
         [('1.0', 'Replaces the inventory.'),
          ('1.26', 'reserved may equal total.')],
         {'200': _json('ProviderInventory', headers=_LAST_MODIFIED)},
         body=s.use('InventoryUpdate', inventories.UPDATE_ONE),
         path_params=class_param)
    b.op('delete', '/resource_providers/{uuid}/inventories/{resource_class}',
         'inventories', 'Delete one inventory',
         [('1.0', 'Refused (409) while allocations use it.')],
         {'204': _empty('Deleted.')}, path_params=class_param)


def _classes(b):
    s = b.schemas
    name_param = {'name': ({'type': 'string'},
                           'The name of a resource class.')}
    body = s.use('ResourceClassCreate', resource_classes.RESOURCE_CLASS)
    b.op('get', '/resource_classes', 'classes', 'List resource classes',
         [('1.2', 'Added.')],
         {'200': _json('ResourceClasses', headers=_LAST_MODIFIED)})
    b.op('post', '/resource_classes', 'classes',
         'Create a custom resource class', [('1.2', 'Added.')],
         {'201': _empty('Created.', headers=['Location'])}, body=body)
    b.op('get', '/resource_classes/{name}', 'classes',
         'Show a resource class', [('1.2', 'Added.')],
         {'200': _json('ResourceClass', headers=_LAST_MODIFIED)},
         path_params=name_param)
    b.op('put', '/resource_classes/{name}', 'classes',
         'Rename (1.2-1.6) or create (1.7+) a custom resource class',
         [('1.2', 'The body names the new name; 200 with the class.'),
          ('1.7', 'No body: creates the class (201) or finds it there '
                  '(204).')],
         {'200': _json('ResourceClass', 'Renamed (before 1.7).'),
          '201': _empty('Created (from 1.7).', headers=['Location']),
          '204': _empty('Already there (from 1.7).', headers=['Location'])},
         body={'description': 'Before microversion 1.7 only.', **body},
         path_params={'name': (
             resource_classes.RESOURCE_CLASS['properties']['name'],
             'The name of a custom resource class.')})
    b.paths['/resource_classes/{name}']['put']['requestBody'][
        'required'] = False
    b.op('delete', '/resource_classes/{name}', 'classes',
         'Delete a custom resource class',
         [('1.2', 'Refused (409) while inventories use it.')],
         {'204': _empty('Deleted.')}, path_params=name_param)


def _traits(b):
    s = b.schemas
    s.used.add(id(traits.LIST_QUERY))
    text = {'name': ('``in:A,B`` (these names) or ``startswith:PREFIX``.'),
            'associated': ('``true``: only traits some provider has; '
                           '``false``: only the others.')}
    b.op('get', '/traits', 'traits', 'List traits', [('1.6', 'Added.')],
         {'200': _json('Traits', headers=_LAST_MODIFIED)},
         query=[_query(name, schema, text[name]) for name, schema in
                traits.LIST_QUERY['properties'].items()])
    any_name = {'name': ({'type': 'string'}, 'The name of a trait.')}
    b.op('get', '/traits/{name}', 'traits', 'Check that a trait exists',
         [('1.6', 'Added.')], {'204': _empty('It exists.', _LAST_MODIFIED)},
         path_params=any_name)
    s.used.add(id(traits.CUSTOM_TRAIT))
    b.op('put', '/traits/{name}', 'traits', 'Create a custom trait',
         [('1.6', 'Added.')],
         {'201': _empty('Created.', ('Location',) + _LAST_MODIFIED),
          '204': _empty('Already there.', ('Location',) + _LAST_MODIFIED)},
         path_params={'name': (copy.deepcopy(traits.CUSTOM_TRAIT),
                               'The name of a custom trait.')})
    b.op('delete', '/traits/{name}', 'traits', 'Delete a custom trait',
         [('1.6', 'Refused (409) while a provider has it.')],
         {'204': _empty('Deleted.')}, path_params=any_name)
    b.op('get', '/resource_providers/{uuid}/traits', 'traits',
         "List a provider's traits", [('1.6', 'Added.')],
         {'200': _json('ProviderTraits', headers=_LAST_MODIFIED)})
    b.op('put', '/resource_providers/{uuid}/traits', 'traits',
         "Replace a provider's traits", [('1.6', 'Added.')],
         {'200': _json('ProviderTraits', headers=_LAST_MODIFIED)},
         body=s.use('ProviderTraitsSet', provider_traits.SET_TRAITS))
    b.op('delete', '/resource_providers/{uuid}/traits', 'traits',
         "Remove all of a provider's traits", [('1.6', 'Added.')],
         {'204': _empty('Removed.')})


def _aggregates(b):
    s = b.schemas
    b.op('get', '/resource_providers/{uuid}/aggregates', 'aggregates',
         "List a provider's aggregates",
         [('1.1', 'Added.'),
          ('1.19', 'resource_provider_generation in the body.')],
         {'200': _json('ProviderAggregates', headers=_LAST_MODIFIED)})
    b.op('put', '/resource_providers/{uuid}/aggregates', 'aggregates',
         "Replace a provider's aggregates",
         [('1.1', 'The body is the list of aggregate uuids.'),
          ('1.19', 'The body is an object with the list and the provider '
                   'generation.')],
         {'200': _json('ProviderAggregates', headers=_LAST_MODIFIED)},
         body=s.versioned('AggregatesSet', aggregates.SET_AGGREGATES))


def _allocations(b):
    s = b.schemas
    consumer = {'consumer_uuid': (
        {'type': 'string'}, 'The uuid of the consumer.')}
    b.op('get', '/allocations/{consumer_uuid}', 'allocations',
         "List a consumer's allocations",
         [('1.0', 'Allocations by provider.'),
          ('1.12', 'project_id and user_id.'),
          ('1.28', 'consumer_generation.'), ('1.38', 'consumer_type.')],
         {'200': _json('ConsumerAllocations', headers=_LAST_MODIFIED)},
         path_params=consumer)
    b.op('put', '/allocations/{consumer_uuid}', 'allocations',
         "Replace a consumer's allocations",
         [('1.0', 'A list of provider and resources.'),
          ('1.8', 'project_id and user_id required.'),
          ('1.12', 'Allocations keyed by provider uuid.'),
          ('1.28', 'consumer_generation required; empty allocations '
                   'remove them.'),
          ('1.34', 'Optional mappings.'),
          ('1.38', 'consumer_type required.')],
         {'204': _empty('Replaced.')},
         body=s.versioned('AllocationsPut', allocations.PUT_SCHEMAS),
         path_params=consumer)
    b.op('delete', '/allocations/{consumer_uuid}', 'allocations',
         "Delete a consumer's allocations", [('1.0', 'Added.')],
         {'204': _empty('Deleted.')}, path_params=consumer)
    b.op('post', '/allocations', 'allocations',
         'Replace the allocations of several consumers at once',
         [('1.13', 'Added.'), ('1.28', 'consumer_generation required.'),
          ('1.34', 'Optional mappings.'),
          ('1.38', 'consumer_type required.')],
         {'204': _empty('Replaced.')},
         body=s.versioned('AllocationsPost', allocations.POST_SCHEMAS))
    b.op('get', '/resource_providers/{uuid}/allocations', 'allocations',
         'List the allocations on a provider',
         [('1.0', 'Allocations by consumer.'),
          ('1.28', 'consumer_generation of each consumer.')],
         {'200': _json('ProviderAllocations', headers=_LAST_MODIFIED)})


def _usages(b):
    s = b.schemas
    b.op('get', '/resource_providers/{uuid}/usages', 'usages',
         "A provider's usages", [('1.0', 'Used amounts by class.')],
         {'200': _json('ProviderUsages', headers=_LAST_MODIFIED)})
    s.used.add(id(usages.USAGES_QUERY))
    schema = microversion.schema_for(MAX_VERSION, usages.USAGES_QUERY)
    text = {'project_id': 'The project.',
            'user_id': 'Only the usage of this user.',
            'consumer_type': ('From microversion 1.38: a consumer type, '
                              '``all`` or ``unknown``; the answer is then '
                              'grouped by consumer type.')}
    b.op('get', '/usages', 'usages', "A project's usages",
         [('1.9', 'Added.'), ('1.38', 'consumer_type filter; grouped by '
                                      'consumer type.')],
         {'200': _json('ProjectUsages', headers=_LAST_MODIFIED)},
         query=[_query(name, value, text[name],
                       required=name in schema['required'])
                for name, value in schema['properties'].items()])


def _reshaper(b):
    s = b.schemas
    b.op('post', '/reshaper', 'reshaper',
         'Replace inventories and allocations in one transaction',
         [('1.30', 'Added.'), ('1.34', 'Optional mappings.'),
          ('1.38', 'consumer_type required.')],
         {'204': _empty('Reshaped.')},
         body=s.versioned('Reshaper', reshaper.SCHEMAS))


def _candidate_parameters(s, query_schemas, versions):
    """The query parameters of ``query_schemas`` ((since version, schema)
    pairs: GET /allocation_candidates' or a claim's), every one any of
    ``versions`` has, described."""
    s.used.add(id(query_schemas))
    by_version = {version: microversion.schema_for(version, query_schemas)
                  for version in versions}
    named = {}
    for version, schema in sorted(by_version.items()):
        named.update(schema['properties'])
    text = {
        'resources': ('Amounts of the unsuffixed group: '
                      '``VCPU:1,MEMORY_MB:512``. Required before 1.25.'),
        'limit': 'At most this many allocation requests. From 1.16.',
        'required': ('Traits of the unsuffixed group. From 1.17; '
                     '``!TRAIT`` from 1.22; repeatable, ``in:`` from 1.39.'),
        'member_of': ('Aggregates of the unsuffixed group. From 1.21; '
                      'repeatable from 1.24; ``!`` from 1.32.'),
        'in_tree': 'Only providers in this tree. From 1.31.',
        'group_policy': ('How suffixed groups share providers. From 1.25; '
                         'required with two or more suffixed groups; '
                         '``isolate:_A,_B`` isolates the groups named '
                         '(1.41, placement_lite).'),
        'root_required': 'Traits of the root provider. From 1.35.',
        'same_subtree': ('Suffixes of groups served within one subtree. '
                         'From 1.36; ``!`` before a suffix keeps that group '
                         'out of the subtree from 1.41 (placement_lite).'),
        'device_profile': ('The name of a device profile whose groups are '
                           'added as granular groups. From 1.40 '
                           '(placement_lite); its alternatives as '
                           'alternatives from 1.42.'),
        'root_member_of': ('Aggregates of the root provider, as member_of '
                           'writes them; repeatable. From 1.41 '
                           '(placement_lite).'),
        'explain': ('``true``: add ``explain``, what each step of the '
                    'search kept; a provider uuid: the same for its tree '
                    'alone. From 1.41 (placement_lite).'),
        'rank_by': ('Order by free capacity after the candidate, in its '
                    'tree: ``spread:MEMORY_MB,VCPU`` (most free first), '
                    '``pack:DISK_GB`` (least free first). From 1.42 '
                    '(placement_lite).'),
        'root_preferred': ('Traits preferred on the root provider: never '
                           'exclude, rank candidates with more first. From '
                           '1.42 (placement_lite).'),
        'alternatives': ('Suffixed groups that are prioritized '
                         'alternatives of one group: ``_A100,_L40``; '
                         'repeatable. From 1.42 (placement_lite).'),
    }
    params = [_query(name, schema, text[name])
              for name, schema in named.items() if name != 'in_tree']
    params.insert(3, _query('in_tree', _STR, text['in_tree']))
    granular = by_version[microversion.EXTENSION_MAXIMUM]['patternProperties']
    params.append({
        'name': 'groups', 'in': 'query', 'style': 'form', 'explode': True,
        'description': (
            'Granular groups (from 1.25): resources, required, member_of '
            'and in_tree with a suffix, digits before 1.33 (``%s``), then '
            'up to 64 letters, digits, ``_`` and ``-`` (``%s``); '
            'preferred, with or without a suffix, from 1.42 '
            '(placement_lite); can_split, with or without a suffix: '
            'classes of its group whose amount may be taken from several '
            'providers of a tree, from 1.44 (placement_lite).'
            % (querystring.NUMBERED_SUFFIX,
               querystring.NAMED_SUFFIX)),
        'schema': {'type': 'object', 'additionalProperties': False,
                   'patternProperties': {
                       pattern.replace(')?$', ')$'): value
                       for pattern, value in granular.items()}}})
    return params


def _candidates(b):
    params = _candidate_parameters(
        b.schemas, allocation_candidates.QUERY,
        [microversion.ALLOCATION_CANDIDATES, microversion.MULTIPLE_MEMBER_OF,
         microversion.EXTENSION_MAXIMUM])
    b.op('get', '/allocation_candidates', 'candidates',
         'List allocation candidates',
         [('1.10', 'Added.'), ('1.12', 'Allocation requests as objects.'),
          ('1.16', 'limit.'), ('1.17', 'required; traits in summaries.'),
          ('1.21', 'member_of.'), ('1.22', 'Forbidden traits.'),
          ('1.24', 'member_of repeatable.'),
          ('1.25', 'Granular groups and group_policy; resources optional.'),
          ('1.27', 'Summaries hold every resource class.'),
          ('1.29', 'Nested candidates; parent and root in summaries.'),
          ('1.31', 'in_tree.'), ('1.32', 'Forbidden aggregates.'),
          ('1.33', 'Named suffixes.'), ('1.34', 'mappings.'),
          ('1.35', 'root_required.'), ('1.36', 'same_subtree.'),
          ('1.39', 'Any-of traits (in:).'),
          ('1.40', 'device_profile (placement_lite).'),
          ('1.41', 'explain, root_member_of, group_policy=isolate:_A,_B, '
                   'same_subtree with ! (placement_lite).'),
          ('1.42', 'rank_by, preferred, root_preferred, alternatives: '
                   "ranked candidates; a device profile's alternatives "
                   '(placement_lite).'),
          ('1.44', 'can_split: a class taken from several providers '
                   "of a tree; a device profile's groups may carry it "
                   '(placement_lite).')],
         {'200': _json('AllocationCandidates', headers=_LAST_MODIFIED)},
         query=params)


def _claims(b):
    b.op('post', '/allocation_claims', 'candidates',
         'Claim the best allocation candidate for consumers',
         [('1.43', 'Added (placement_lite).'),
          ('1.44', 'can_split in the query (placement_lite).')],
         {'200': _json('AllocationClaims', 'Claimed.')},
         body=b.schemas.versioned('AllocationClaim',
                                  allocation_claims.BODY),
         query=_candidate_parameters(b.schemas, allocation_claims.QUERY,
                                     [microversion.CLAIMS,
                                      microversion.CAN_SPLIT]),
         description=(
             'The query is that of GET /allocation_candidates but for '
             'explain. The best candidate by the rank key is allocated to '
             'each consumer, all or none, in one transaction; a candidate '
             'lost to a concurrent writer is followed by the next best. '
             'trees: any (the default), distinct (each consumer of a batch '
             'in a tree of its own) or same_aggregate (every tree of the '
             'batch in one aggregate). '
             '409 placement_lite.claim.nothing_fits when nothing fits '
             '(api-ref/extensions.md).'))


def _device_profiles(b):
    s = b.schemas
    profile = s.versioned('DeviceProfileCreate', device_profiles.CREATE)
    s.used.add(id(device_profiles.group))
    names = _query('name', _STR, 'Comma separated profile names.')
    added = ('1.40', 'Added (placement_lite).')
    shown = ('1.42', 'alternatives in each profile.')
    split = ('1.44', "can_split:<CLASS> keys in a profile's groups.")
    b.op('get', '/device_profiles', 'device profiles',
         'List device profiles', [added, shown, split],
         {'200': _json('DeviceProfiles', headers=_LAST_MODIFIED)},
         query=[names])
    b.op('post', '/device_profiles', 'device profiles',
         'Create a device profile',
         [added, ('1.42', 'alternatives in the body and the profile.'),
          split],
         {'201': _json('DeviceProfile', 'Created.',
                       headers=('Location',) + _LAST_MODIFIED)},
         body={'anyOf': [profile, {
             'type': 'array', 'items': profile,
             'minItems': 1, 'maxItems': 1,
             'description': "Cyborg's form: a list of one profile."}]})
    b.op('delete', '/device_profiles', 'device profiles',
         'Delete device profiles by name', [added],
         {'204': _empty('Deleted.')}, query=[dict(names, required=True)])
    which = {'uuid_or_name': ({'type': 'string'},
                              'The uuid or name of a device profile.')}
    b.op('get', '/device_profiles/{uuid_or_name}', 'device profiles',
         'Show a device profile', [added, shown, split],
         {'200': _json('DeviceProfileDocument', headers=_LAST_MODIFIED)},
         path_params=which)
    b.op('delete', '/device_profiles/{uuid_or_name}', 'device profiles',
         'Delete a device profile', [added],
         {'204': _empty('Deleted.')}, path_params=which)


def _error_response(description, schema_name):
    return {'description': description, 'content': {
        'application/json': {'schema': _ref('schemas', schema_name)},
        'text/html; charset=UTF-8': {'schema': _STR},
        'text/plain; charset=UTF-8': {'schema': _STR}}}


def _components(schemas):
    return {
        'parameters': {'OpenStackApiVersion': {
            'name': 'OpenStack-API-Version', 'in': 'header',
            'description': (
                'The microversion: ``placement 1.N`` or ``placement '
                'latest``; 1.0 when absent.'),
            'schema': {'type': 'string', 'pattern': (
                r'^placement (1\.([0-9]|[1-3][0-9]|%s)|latest)$' % '|'.join(
                    version.split('.')[1] for version in _EXTENSION_VERSIONS))}}},
        'headers': {
            'OpenStack-API-Version': {
                'description': 'The microversion of the answer.',
                'schema': _STR},
            'Location': {'description': 'The URL of the new item.',
                         'schema': _STR},
            'Last-Modified': {'description': 'From microversion 1.15.',
                              'schema': _STR},
            'Cache-Control': {'description': (
                'From microversion 1.15: ``no-cache``.'), 'schema': _STR},
        },
        'responses': {
            'Error': _error_response(
                'An error, in the format the Accept header prefers: JSON '
                '(the default), HTML or plain text.', 'Error'),
            'Unauthorized': _error_response(
                'No token, or one keystone refuses: the authentication '
                "middleware's own format (webob's with noauth2, "
                "keystonemiddleware's with keystone).", 'AuthError')},
        'securitySchemes': {'token': {
            'type': 'apiKey', 'in': 'header', 'name': 'X-Auth-Token',
            'description': ('A keystone token, or with noauth2 any value '
                            '(``admin`` for an administrator).')}},
        'schemas': schemas,
    }


def build():
    """The document, as a dict."""
    b = Builder()
    for part in (_providers, _inventories, _classes, _traits, _aggregates,
                 _allocations, _usages, _reshaper, _candidates, _claims,
                 _device_profiles):
        part(b)
    schemas = _response_schemas()
    schemas.update(b.schemas.components)
    document = {
        'openapi': '3.1.0',
        'info': {
            'title': 'placement_lite',
            'version': str(MAX_VERSION),
            'summary': ('The OpenStack Placement API (microversions '
                        '1.0-%s) and placement_lite\'s %s.' % (
                            microversion.REFERENCE_MAXIMUM,
                            ', '.join(_EXTENSION_VERSIONS))),
            'description': (
                'Generated by tests/openapi/document.py from the '
                "service's request schemas; do not edit by hand. Every "
                'operation accepts the OpenStack-API-Version header; '
                'x-openstack-microversions lists the changes of each.'),
        },
        'tags': [{'name': tag, 'description': title}
                 for tag, _page, title in TAGS],
        'security': [{'token': []}],
        'paths': dict(sorted(b.paths.items())),
        'components': _components(schemas),
    }
    document['paths']['/']['get']['security'] = [{}]
    return document, b.schemas.used


def render(document):
    return yaml.safe_dump(document, sort_keys=False, width=79,
                          allow_unicode=True)


def main():
    with open(PATH, 'w') as handle:
        handle.write(render(build()[0]))


if __name__ == '__main__':
    main()
