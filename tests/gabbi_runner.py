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
    method: str = ''
    url: str = ''  # as requested, or as written when not requested


#: How gabbi skips every test of a file whose fixture raised, after
#: reporting the fixture's exception as an error of the first test.
_FIXTURE_FAILURE = 'fixture failure'


class _Collector(unittest.TestResult):
    def __init__(self):
        super().__init__()
        self.outcomes = []
        self._by_test = {}
        self._last_error = ''

    def _record(self, test, status, message=''):
        data = getattr(test, 'test_data', None) or {}
        # gabbi keeps the URL it requested (substitutions made) on the test.
        url = getattr(test, 'url', None) or data.get('url', '')
        outcome = Outcome(data.get('name', test.id()), status, message,
                          data.get('method', ''), url)
        if id(test) in self._by_test:
            self.outcomes[self._by_test[id(test)]] = outcome
        else:
            self._by_test[id(test)] = len(self.outcomes)
            self.outcomes.append(outcome)

    def addSuccess(self, test):
        self._record(test, 'passed')

    def addFailure(self, test, err):
        self._record(test, 'failed', self._exc_info_to_string(err, test))

    def addError(self, test, err):
        self._last_error = self._exc_info_to_string(err, test)
        self._record(test, 'error', self._last_error)

    def addSkip(self, test, reason):
        if reason == _FIXTURE_FAILURE:
            self._record(test, 'error',
                         'fixture failure: %s' % self._last_error)
        else:
            self._record(test, 'skipped', reason)

    def addExpectedFailure(self, test, err):
        self._record(test, 'passed', 'xfail')

    def addUnexpectedSuccess(self, test):
        self._record(test, 'failed', 'unexpected success')


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
