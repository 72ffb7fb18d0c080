"""The reference's own gabbi files, fetched from PyPI when first needed.

The openstack-placement wheel is downloaded with pip (no dependencies, no
installation) into a cache directory, and only its functional gabbi YAML
files are extracted from it. Nothing of the reference is importable from
here and nothing of it is committed: the cache is gitignored, and a second
run finds the files already there.
"""

import contextlib
import fcntl
import os
import subprocess
import sys
import tempfile
import zipfile

PACKAGE = 'openstack-placement'
VERSION = '16.0.0'
GABBITS_IN_WHEEL = 'placement/tests/functional/gabbits/'
REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__),
                                         os.pardir, os.pardir))
DEFAULT_CACHE = os.path.join(REPO_ROOT, '.cache', 'conformance')


def cache_dir():
    return os.environ.get('PLACEMENT_LITE_CONFORMANCE_CACHE', DEFAULT_CACHE)


def gabbits_dir():
    """The directory holding the reference's gabbi files, fetching them once.

    Safe to call from several processes at once (pytest-xdist workers): the
    first one downloads under a lock, the others wait and reuse its result.
    """
    root = cache_dir()
    target = os.path.join(root, '%s-%s-gabbits' % (PACKAGE, VERSION))
    os.makedirs(root, exist_ok=True)
    with _locked(os.path.join(root, '.lock')):
        if not os.path.exists(os.path.join(target, '.complete')):
            _extract_gabbits(_download_wheel(root), target)
    return target


def yaml_files():
    directory = gabbits_dir()
    return sorted(os.path.join(directory, name)
                  for name in os.listdir(directory)
                  if name.endswith('.yaml'))


@contextlib.contextmanager
def _locked(path):
    with open(path, 'w') as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _download_wheel(root):
    wheels = os.path.join(root, 'wheels')
    existing = _find_wheel(wheels)
    if existing:
        return existing
    command = [sys.executable, '-m', 'pip', 'download', '--quiet',
               '--no-deps', '--only-binary=:all:', '--dest', wheels,
               '%s==%s' % (PACKAGE, VERSION)]
    result = subprocess.run(command, capture_output=True, text=True)
    wheel = _find_wheel(wheels)
    if result.returncode != 0 or not wheel:
        raise RuntimeError('could not download %s==%s from PyPI:\n%s'
                           % (PACKAGE, VERSION, result.stderr))
    return wheel


def _find_wheel(directory):
    if not os.path.isdir(directory):
        return None
    prefix = '%s-%s-' % (PACKAGE.replace('-', '_'), VERSION)
    for name in os.listdir(directory):
        if name.startswith(prefix) and name.endswith('.whl'):
            return os.path.join(directory, name)
    return None


def _extract_gabbits(wheel, target):
    os.makedirs(target, exist_ok=True)
    with zipfile.ZipFile(wheel) as archive:
        members = [name for name in archive.namelist()
                   if name.startswith(GABBITS_IN_WHEEL)
                   and name.endswith('.yaml')]
        if not members:
            raise RuntimeError('no gabbi files in %s' % wheel)
        for member in members:
            destination = os.path.join(target, os.path.basename(member))
            with tempfile.NamedTemporaryFile('wb', dir=target,
                                             delete=False) as out:
                out.write(archive.read(member))
            os.replace(out.name, destination)
    open(os.path.join(target, '.complete'), 'w').close()
