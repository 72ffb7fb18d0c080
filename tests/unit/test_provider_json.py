"""A provider's JSON document, assembled as text, is json.dumps's bytes for
the document the reference shows, at every microversion shape."""

import json
import types

import microversion_parse
import pytest

from placement_lite import microversion
from placement_lite.handlers import resource_providers

ROOT = '0b52ec9c-6a3e-4b0f-9d2e-5c7a3f1d2e01'
CHILD = '9f1c2d3e-4b5a-4c6d-8e7f-0a1b2c3d4e5f'
#: Names json.dumps has to escape, or that look like JSON separators.
NAMES = ['plain', 'with "quotes" and \\ backslash', 'a, b: c',
         'caf\u00e9 \u2603', 'tab\tand\nnewline']
#: (microversion, link relations shown after "self", tree uuids shown).
SHAPES = [
    ('1.0', ['inventories', 'usages'], False),
    ('1.1', ['inventories', 'usages', 'aggregates'], False),
    ('1.6', ['inventories', 'usages', 'aggregates', 'traits'], False),
    ('1.11', ['inventories', 'usages', 'aggregates', 'traits',
              'allocations'], False),
    ('1.14', ['inventories', 'usages', 'aggregates', 'traits',
              'allocations'], True),
    ('1.39', ['inventories', 'usages', 'aggregates', 'traits',
              'allocations'], True),
]


def _request(version, root_path):
    version = microversion_parse.extract_version(
        {'openstack-api-version': 'placement %s' % version}, 'placement',
        microversion.versions(enable_extensions=True))
    return types.SimpleNamespace(
        root_path=root_path, env={microversion.ENVIRON: version})


def _expected(provider, relations, with_tree, root_path):
    path = '%s/resource_providers/%s' % (root_path, provider.uuid)
    document = {
        'uuid': provider.uuid,
        'name': provider.name,
        'generation': provider.generation,
        'links': [{'rel': 'self', 'href': path}] + [
            {'rel': rel, 'href': path + '/' + rel} for rel in relations],
    }
    if with_tree:
        document['parent_provider_uuid'] = provider.parent_provider_uuid
        document['root_provider_uuid'] = provider.root_provider_uuid
    return document


@pytest.mark.parametrize('version, relations, with_tree', SHAPES)
@pytest.mark.parametrize('root_path', ['', '/placement'])
def test_provider_json_is_json_dumps(version, relations, with_tree,
                                     root_path):
    render = resource_providers.provider_json(_request(version, root_path))
    for name in NAMES:
        for uuid, parent in ((ROOT, None), (CHILD, ROOT)):
            provider = types.SimpleNamespace(
                uuid=uuid, name=name, generation=7,
                parent_provider_uuid=parent, root_provider_uuid=ROOT)
            assert render(provider.uuid, name, 7, parent, ROOT) == json.dumps(
                _expected(provider, relations, with_tree, root_path))
