"""Run one gabbi YAML file in-process against a fresh placement_lite, or
over HTTP against one serving elsewhere (:func:`run_file_live`: the
container image's, tests/test_container.py).

Used by the project's own gabbi tests (tests/test_gabbits.py) and by the
conformance runner (tests/conformance). Returns one outcome per request so
callers can report or compare them. Every response is checked against
api-ref/openapi.yaml on the way (tests/openapi/responses.py): an outcome
lists what did not match in ``violations``, and keeps its requests and
responses in ``exchanges`` (the API reference's examples come from them).
"""

import dataclasses
import io
import os
import unittest
import uuid

from gabbi import fixture
from gabbi import handlers
from gabbi import suitemaker
from gabbi import utils

from tests import harness
from tests.openapi import responses as openapi_responses


@dataclasses.dataclass
class Exchange:
    """One request the app answered, as bytes and header dicts."""
    method: str
    path: str
    query: str
    host: str
    request_headers: dict
    request_body: bytes
    status: int
    response_headers: dict
    response_body: bytes
    route: str = None  # the document's path template, when it has one


@dataclasses.dataclass
class Outcome:
    name: str
    #: 'passed', 'failed', 'error', 'skipped', or 'xfailed': a request
    #: the YAML marks ``xfail`` failed, as it says it would (one that
    #: passes is 'failed').
    status: str
    message: str = ''
    method: str = ''
    url: str = ''  # as requested, or as written when not requested
    exchanges: list = dataclasses.field(default_factory=list)
    violations: list = dataclasses.field(default_factory=list)


#: How gabbi skips every test of a file whose fixture raised, after
#: reporting the fixture's exception as an error of the first test.
_FIXTURE_FAILURE = 'fixture failure'


class _Collector(unittest.TestResult):
    def __init__(self):
        super().__init__()
        self.outcomes = []
        self._by_test = {}
        self._last_error = ''
        #: Exchanges and violations of the test running now.
        self.current = ([], [])
        #: ids of the tests marked xfail whose outcome gabbi reported.
        self._xfail_reported = set()

    def startTest(self, test):
        super().startTest(test)
        self.current = ([], [])

    def _record(self, test, status, message=''):
        data = getattr(test, 'test_data', None) or {}
        # gabbi keeps the URL it requested (substitutions made) on the test.
        url = getattr(test, 'url', None) or data.get('url', '')
        outcome = Outcome(data.get('name', test.id()), status, message,
                          data.get('method', ''), url, *self.current)
        if id(test) in self._by_test:
            self.outcomes[self._by_test[id(test)]] = outcome
        else:
            self._by_test[id(test)] = len(self.outcomes)
            self.outcomes.append(outcome)

    def addSuccess(self, test):
        # gabbi reports a test marked xfail itself, from within the test
        # method (case.potentialFailure), which then returns: unittest
        # reports a success after it, which must not hide what it said.
        if id(test) not in self._xfail_reported:
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
        self._xfail_reported.add(id(test))
        self._record(test, 'xfailed', self._exc_info_to_string(err, test))

    def addUnexpectedSuccess(self, test):
        self._xfail_reported.add(id(test))
        self._record(test, 'failed',
                     'marked xfail, and passed: unexpected success')


def _suite(yaml_path, host, port, fixture_module, intercept):
    """``yaml_path``'s requests as a unittest suite, to ``host``:``port``
    over HTTP or to the WSGI app ``intercept()`` returns."""
    suite_dict = utils.load_yaml(yaml_file=yaml_path, safe=True)
    name = os.path.splitext(os.path.basename(yaml_path))[0]
    return suitemaker.test_suite_from_dict(
        unittest.TestLoader(), name, suite_dict, os.path.dirname(yaml_path),
        host, port, fixture_module, intercept,
        handlers=[handler() for handler in handlers.RESPONSE_HANDLERS],
        test_loader_name='gabbi')


class _LiveFixture(fixture.GabbiFixture):
    """Nothing to set up: the live service's database is the file's own."""


class _LiveFixtures:
    APIFixture = _LiveFixture


def run_file_live(yaml_path, host, port):
    """Run every request in ``yaml_path`` over HTTP against the service
    listening at ``host``:``port``, which must serve a fresh database with
    the default configuration (the file's fixtures, APIFixture only, do
    nothing); returns a list of Outcome, without the OpenAPI check."""
    result = _Collector()
    _suite(yaml_path, host, port, _LiveFixtures, None).run(result)
    return result.outcomes


def run_file(yaml_path, backend, fixture_module):
    """Run every request in ``yaml_path``; returns a list of Outcome."""
    session = harness.begin_file(backend)

    result = _Collector()

    def app(environ, start_response):
        # Resolved per request: gabbi builds its client before the
        # fixtures (which may change configuration) have run.
        return _recorded(session.environment().app, environ, start_response,
                         *result.current)

    try:
        _suite(yaml_path, str(uuid.uuid4()), None, fixture_module,
               lambda: app).run(result)
        return result.outcomes
    finally:
        harness.end_file()


_REQUEST_HEADERS = {'CONTENT_TYPE': 'content-type'}


def _recorded(app, environ, start_response, exchanges, violations):
    """Call ``app``; append the exchange to ``exchanges`` and what does
    not match the OpenAPI document to ``violations``."""
    # The whole input, whatever CONTENT_LENGTH claims (a test may send a
    # malformed one): the in-process transport's input is a BytesIO.
    request_body = environ['wsgi.input'].read()
    environ['wsgi.input'] = io.BytesIO(request_body)
    request_headers = {
        key[5:].replace('_', '-').lower(): value
        for key, value in environ.items() if key.startswith('HTTP_')}
    request_headers.update({name: environ[key] for key, name in
                            _REQUEST_HEADERS.items() if environ.get(key)})
    captured = {}

    def recording_start_response(status, headers, exc_info=None):
        captured['status'] = int(status.split()[0])
        captured['headers'] = {name.lower(): value for name, value in headers}
        return start_response(status, headers, exc_info)

    body = b''.join(app(environ, recording_start_response))
    exchange = Exchange(
        environ['REQUEST_METHOD'], environ.get('PATH_INFO', ''),
        environ.get('QUERY_STRING', ''), environ.get('HTTP_HOST', ''),
        request_headers, request_body, captured['status'],
        captured['headers'], body)
    exchange.route, problems = openapi_responses.checker().check(
        exchange.method, exchange.path, exchange.status,
        exchange.response_headers.get('content-type'), body)
    exchanges.append(exchange)
    violations.extend(problems)
    return [body]
