"""nova's own functional tests, run against placement_lite.

nova 34.0.0 runs its functional tests against Placement in-process:
``nova.tests.functional.fixtures.PlacementFixture`` extends the
reference's ``placement.tests.functional.fixtures.placement.PlacementFixture``
and reaches it through wsgi-intercept. Here nova runs from a virtual
environment of its own (:mod:`tests.nova.environment`, built once under
``.bench/``), and before nova's tests are loaded :mod:`tests.nova.fixture`
takes the reference's fixture module's place, so that nova's fixture
extends one serving placement_lite. Nothing of nova is edited.

- :mod:`tests.nova.environment`: the virtual environment, and running the
  runner in it (from the project's interpreter).
- :mod:`tests.nova.fixture`, :mod:`tests.nova.runner`: run inside nova's
  environment.
- ``python -m tests.nova PATH...``: any of nova's functional tests, from
  the command line (see docs/testing.md).
- tests/test_nova_functional.py: the modules the test command runs.
"""
