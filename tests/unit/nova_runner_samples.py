"""unittest cases for tests/unit/test_nova_runner.py to run through
tests.nova.runner: one of each outcome. Not collected by pytest (the
file's name does not start with test_)."""

import unittest

#: What the samples did that the runner is told about: requests they
#: "served" and writes the generation guard "caught".
requests = [0]
caught = []


class Outcomes(unittest.TestCase):

    def test_passes(self):
        requests[0] += 3

    def test_fails(self):
        requests[0] += 1
        self.assertEqual(1, 2)

    def test_errs(self):
        raise RuntimeError('broken')

    def test_skipped(self):
        self.skipTest('not here')

    @unittest.expectedFailure
    def test_expected_failure(self):
        self.assertEqual(1, 2)

    @unittest.expectedFailure
    def test_unexpected_success(self):
        pass

    def test_unbumped_write(self):
        caught.append('rows of inventories written')


class SetUpFails(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        raise RuntimeError('no class today')

    def test_never_runs(self):
        pass
