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


def _modules():
    """(dotted name, path, parsed tree) of every module of the package."""
    for path in sorted(PACKAGE.rglob('*.py')):
        module = '.'.join(('placement_lite',) + path.relative_to(
            PACKAGE).with_suffix('').parts).removesuffix('.__init__')
        yield module, path, ast.parse(path.read_text())


def _imported(tree):
    """The dotted names of the placement_lite modules (or names of them)
    ``tree`` imports."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            yield from (node.module + '.' + alias.name
                        for alias in node.names)


#: The db/cloud package: what a process keeps between requests
#: (docs/architecture.md, "What a process keeps").
CLOUD = 'placement_lite.db.cloud'


def test_the_engine_reads_the_cloud_through_its_view_only():
    """The engine's only door to what the process keeps and to the
    database is db.cloud (a request's View, the Window, the Key): no
    module of the engine imports another of db."""
    reached = sorted({(module, name) for module, _path, tree in _modules()
                      if module.startswith('placement_lite.engine')
                      for name in _imported(tree)
                      if name.startswith('placement_lite.db')
                      and name != CLOUD})
    assert reached == []


def test_db_candidates_holds_sql_alone():
    """db/candidates.py imports nothing of what a process keeps (the View
    decides what is kept and what is read there)."""
    tree = ast.parse((PACKAGE / 'db' / 'candidates.py').read_text())
    assert [name for name in _imported(tree)
            if name.startswith('placement_lite.')] == [
        'placement_lite.db.links', 'placement_lite.db.tables']


#: Attributes only what a process keeps has: its store, and the store's
#: columns and records.
STORE_ATTRIBUTES = frozenset({'store', 'rows', 'slots', 'row_of',
                              'changed_at', 'trait_sets', 'unrendered'})


def test_nothing_outside_the_cloud_reads_the_store():
    """No module outside db/cloud reads the store or its columns: what a
    request needs of them, its View gives."""
    read = sorted({(module, node.attr) for module, _path, tree in _modules()
                   if not (module + '.').startswith(CLOUD + '.')
                   for node in ast.walk(tree)
                   if isinstance(node, ast.Attribute)
                   and node.attr in STORE_ATTRIBUTES})
    assert read == []


def test_no_per_database_state_outside_the_cloud():
    """Nothing outside db/cloud keeps state per database (a module-level
    WeakKeyDictionary by engine, as several did): the Cloud owns it."""
    kept = sorted(module for module, _path, tree in _modules()
                  if not (module + '.').startswith(CLOUD + '.')
                  for node in tree.body
                  if isinstance(node, (ast.Assign, ast.AnnAssign))
                  and 'WeakKeyDictionary' in ast.dump(node))
    assert kept == []
