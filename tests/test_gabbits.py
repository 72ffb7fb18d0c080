"""Run every gabbi file in gabbits/, each on a fresh database, per backend."""

import glob
import os

import pytest

from tests import fixtures
from tests import gabbi_runner

#: Run on MariaDB too (see tests/conftest.py).
pytestmark = pytest.mark.mysql

GABBITS = sorted(glob.glob(os.path.join(
    os.path.dirname(__file__), os.pardir, 'gabbits', '*.yaml')))


@pytest.mark.parametrize('yaml_path', GABBITS,
                         ids=[os.path.basename(p) for p in GABBITS])
def test_gabbi_file(yaml_path, backend):
    outcomes = gabbi_runner.run_file(yaml_path, backend, fixtures)
    assert outcomes, 'no requests ran'
    failures = [o for o in outcomes if o.status in ('failed', 'error')]
    assert not failures, '\n\n'.join(
        '%s: %s\n%s' % (o.name, o.status, o.message) for o in failures)
