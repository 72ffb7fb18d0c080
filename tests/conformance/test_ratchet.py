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

from tests.conformance import fixtures
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


def _at_latest(path):
    """Whether an upstream file asks for ``latest``, the only requests
    extensions can change (placement_lite's microversions are above
    1.39)."""
    with open(path, encoding='utf-8') as handle:
        return 'placement latest' in handle.read()


AT_LATEST = [path for path in UPSTREAM_FILES if _at_latest(path)]
#: With extensions on, latest is placement_lite's newest microversion.
LATEST_TEST = ('microversion.yaml', 'latest microversion is 1.39')


@pytest.mark.only_backends('sqlite')
@pytest.mark.parametrize('yaml_path', AT_LATEST,
                         ids=[os.path.basename(p) for p in AT_LATEST])
def test_with_extensions_only_latest_differs(yaml_path, backend,
                                              monkeypatch):
    """Extensions on, the upstream files asking for ``latest`` fail one
    test, the one asserting that latest is 1.39."""
    monkeypatch.setattr(fixtures, 'EXTENSIONS', True)
    _name, results, _seconds = runner.run_one_file(yaml_path, backend)
    failed = {result.key for result in results
              if runner.counts_as_failure(result)}
    assert failed == {LATEST_TEST} & {result.key for result in results}
