"""The layers of placement_lite, by what its modules import: no module
imports one of a higher layer (docs/architecture.md, "Layout").

Each top-level module or package of ``placement_lite`` stands in one
layer, from the entry points down to what everything uses. A module may
import its own layer's or any lower one's. A module that is in no layer
fails the test: whoever adds it says where it stands.
"""

import ast
import pathlib

import placement_lite

#: From the top down.
LAYERS = (
    ('cli', 'wsgi'),
    ('app',),
    ('routes', 'status', 'galera_check', 'osc'),
    ('handlers',),
    ('domain', 'metrics'),
    ('engine',),
    ('db', 'migrations'),
    ('schemas', 'schema_errors', 'request_body', 'request_json',
     'worker_death', 'drain', 'heap', 'policy', 'requestlog', 'conf'),
    ('querystring',),
    ('errors', 'microversion', 'observe', 'context', 'policies', 'pretty',
     'charts', 'closing'),
)
PACKAGE = pathlib.Path(placement_lite.__file__).parent


def _unit(dotted):
    """The top-level module or package of ``placement_lite`` the dotted
    name ``dotted`` is in, or None for the package itself."""
    parts = dotted.split('.')
    return parts[1] if len(parts) > 1 else None


def _imports():
    """{(importing unit, imported unit)} over every module of the
    package."""
    found = set()
    for path in PACKAGE.rglob('*.py'):
        module = '.'.join(('placement_lite',) + path.relative_to(
            PACKAGE).with_suffix('').parts)
        importing = _unit(module.removesuffix('.__init__'))
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = ([node.module + '.' + alias.name
                          for alias in node.names]
                         if node.module == 'placement_lite'
                         else [node.module])
            else:
                continue
            for name in names:
                imported = _unit(name) if name.startswith(
                    'placement_lite.') else None
                if imported and importing and imported != importing:
                    found.add((importing, imported))
    return found


def test_no_module_imports_a_higher_layer():
    layer_of = {unit: depth for depth, units in enumerate(LAYERS)
                for unit in units}
    units = {path.stem if path.is_file() else path.name
             for path in PACKAGE.iterdir()
             if (path.suffix == '.py' and path.stem != '__init__')
             or (path / '__init__.py').exists()}
    assert units - set(layer_of) == set()
    assert sorted((importing, imported) for importing, imported in _imports()
                  if layer_of[imported] < layer_of[importing]) == []
