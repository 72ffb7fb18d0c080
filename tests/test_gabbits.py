"""Run every gabbi file in gabbits/, each on a fresh database, per backend.

Every response must also match api-ref/openapi.yaml (the runner checks
each one as it comes).
"""

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
    violations = [v for o in outcomes for v in o.violations]
    assert not violations, 'responses that do not match the OpenAPI ' \
        'document:\n' + '\n'.join(violations)
