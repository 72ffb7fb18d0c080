"""What the wheel installs: every package of the tree, under placement_lite."""

import os
import tomllib

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _python_directories(top, package):
    """{package name: directory} of every directory under ``top`` holding
    Python modules, named as ``package`` and its subpackages."""
    found = {}
    for directory, subdirectories, files in os.walk(os.path.join(REPO, top)):
        subdirectories[:] = [d for d in subdirectories if d != '__pycache__']
        if any(name.endswith('.py') for name in files):
            relative = os.path.relpath(directory, os.path.join(REPO, top))
            name = package if relative == '.' else '.'.join(
                [package] + relative.split(os.sep))
            found[name] = directory
    return found


def test_every_package_is_listed_and_nothing_is_top_level():
    with open(os.path.join(REPO, 'pyproject.toml'), 'rb') as handle:
        setuptools = tomllib.load(handle)['tool']['setuptools']
    expected = _python_directories('placement_lite', 'placement_lite')
    expected.update(_python_directories('migrations',
                                        'placement_lite.migrations'))

    assert sorted(setuptools['packages']) == sorted(expected)
    assert setuptools['package-dir'] == {
        'placement_lite.migrations': 'migrations'}
