"""placement_lite answers as the reference does (tests/differential).

A few fixed worlds, each built through the API and sent 60 generated
requests, on both services; every difference must be one that
api-ref/divergences.md lists. ``python -m tests.differential --worlds N``
runs more.
"""

import pytest

from tests.differential import runner

pytestmark = pytest.mark.slow

SEEDS = (1, 2, 3, 4)
REQUESTS = 60


@pytest.fixture(scope='session')
def differential_runs():
    """One reference process per backend for the whole session."""
    runs = {}
    yield runs
    for run in runs.values():
        run.close()


@pytest.mark.parametrize('seed', SEEDS)
def test_no_unlisted_difference(backend, seed, differential_runs):
    if backend not in differential_runs:
        differential_runs[backend] = runner.Run(backend)
    differences = differential_runs[backend].world(seed, REQUESTS)
    unlisted = [d.reproduction() for d in differences if not d.listed]
    assert not unlisted, '\n'.join(unlisted)
