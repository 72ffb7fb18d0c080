"""Run every gabbi file in gabbits/, each on a fresh database, per backend.

Every response must also match api-ref/openapi.yaml (the runner checks
each one as it comes). A request the YAML marks ``xfail`` that fails makes
its file's test an xfail, naming it; one that passes fails it.
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
    xfailed = [o.name for o in outcomes if o.status == 'xfailed']
    if xfailed:
        pytest.xfail('failing, as marked: %s' % '; '.join(xfailed))


_MARKED = """
tests:
- name: fails as marked
  desc: the root answers 200, not the 404 asked for
  xfail: true
  GET: /
  status: 404
- name: passes though marked
  desc: the root answers 200, as asked, against its xfail mark
  xfail: true
  GET: /
  status: 200
- name: passes
  desc: the root answers 200
  GET: /
  status: 200
"""


@pytest.mark.only_backends('sqlite')
def test_xfails_are_reported_as_xfails(backend, tmp_path):
    """The runner reports what gabbi reports: an xfail as an xfail, an
    xfail that passed as a failure."""
    path = tmp_path / 'marked.yaml'
    path.write_text(_MARKED)
    outcomes = gabbi_runner.run_file(str(path), backend, fixtures)
    assert [(o.name, o.status) for o in outcomes] == [
        ('fails as marked', 'xfailed'), ('passes though marked', 'failed'),
        ('passes', 'passed')]
    assert 'unexpected success' in outcomes[1].message
