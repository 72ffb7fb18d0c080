"""Run one gabbi YAML file in-process against a fresh placement_lite.

Used by the project's own gabbi tests (tests/test_gabbits.py) and by the
conformance runner (tests/conformance). Returns one outcome per request so
callers can report or compare them.
"""

import dataclasses
import os
import unittest
import uuid

from gabbi import handlers
from gabbi import suitemaker
from gabbi import utils

from tests import harness


@dataclasses.dataclass
class Outcome:
    name: str
    status: str  # 'passed', 'failed', 'error' or 'skipped'
    message: str = ''


class _Collector(unittest.TestResult):
    def __init__(self):
        super().__init__()
        self.outcomes = []

    def addSuccess(self, test):
        self.outcomes.append(Outcome(_short(test), 'passed'))

    def addFailure(self, test, err):
        self.outcomes.append(Outcome(_short(test), 'failed',
                                     self._exc_info_to_string(err, test)))

    def addError(self, test, err):
        self.outcomes.append(Outcome(_short(test), 'error',
                                     self._exc_info_to_string(err, test)))

    def addSkip(self, test, reason):
        self.outcomes.append(Outcome(_short(test), 'skipped', reason))

    def addExpectedFailure(self, test, err):
        self.outcomes.append(Outcome(_short(test), 'passed', 'xfail'))

    def addUnexpectedSuccess(self, test):
        self.outcomes.append(Outcome(_short(test), 'failed',
                                     'unexpected success'))


def _short(test):
    """The request's ``name`` from the YAML (the fixture steps have none)."""
    data = getattr(test, 'test_data', None)
    return data['name'] if data else test.id()


def run_file(yaml_path, backend, fixture_module):
    """Run every request in ``yaml_path``; returns a list of Outcome."""
    loader = unittest.TestLoader()
    handler_objects = [handler() for handler in handlers.RESPONSE_HANDLERS]
    suite_dict = utils.load_yaml(yaml_file=yaml_path, safe=True)
    name = os.path.splitext(os.path.basename(yaml_path))[0]
    session = harness.begin_file(backend)

    def app(environ, start_response):
        # Resolved per request: gabbi builds its client before the
        # fixtures (which may change configuration) have run.
        return session.environment().app(environ, start_response)

    try:
        file_suite = suitemaker.test_suite_from_dict(
            loader, name, suite_dict, os.path.dirname(yaml_path),
            str(uuid.uuid4()), None, fixture_module,
            lambda: app,
            handlers=handler_objects, test_loader_name='gabbi')
        result = _Collector()
        file_suite.run(result)
        return result.outcomes
    finally:
        harness.end_file()
