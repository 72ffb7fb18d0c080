"""The conformance ratchet: the reference's own gabbi files, per backend.

One test per upstream file and backend (so pytest-xdist spreads them): it
fails when a test of the file fails that expected_failures.txt does not
list, and when a listed test now passes, so the list can only shrink. The
list is the same for both backends: a test that passes on one and fails on
the other is a divergence to fix, not to record. After making listed
tests pass, run ``python -m tests.conformance --write-expected`` and commit
the shorter list.
"""

import os

import pytest

from tests.conformance import runner
from tests.conformance import upstream

#: Run on MariaDB too (see tests/conftest.py).
pytestmark = pytest.mark.mysql

UPSTREAM_FILES = upstream.yaml_files()
EXPECTED = runner.read_expected()
HOW_TO_UPDATE = ('python -m tests.conformance --write-expected rewrites '
                 'tests/conformance/expected_failures.txt')


@pytest.mark.parametrize('yaml_path', UPSTREAM_FILES,
                         ids=[os.path.basename(p) for p in UPSTREAM_FILES])
def test_upstream_file(yaml_path, backend):
    _name, results, _seconds = runner.run_one_file(yaml_path, backend)
    unexpected, fixed = runner.compare(results, EXPECTED)
    problems = (['fails, not listed as expected (%s):\n  %s\n%s'
                 % (r.reason, r.name, r.message) for r in unexpected]
                + ['passes now, still listed as an expected failure: %s'
                   % r.name for r in fixed])
    assert not problems, '\n'.join(problems + [HOW_TO_UPDATE])


def test_expected_failures_name_upstream_tests():
    """Every listed test exists upstream (no stale or misspelt entries)."""
    import yaml

    known = set()
    for path in UPSTREAM_FILES:
        with open(path, encoding='utf-8') as handle:
            tests = yaml.safe_load(handle)['tests']
        known.update((os.path.basename(path), name) for name in
                     runner.unique_names(test['name'] for test in tests))
    stale = sorted(set(EXPECTED) - known)
    assert not stale, 'listed but not upstream: %s' % stale
