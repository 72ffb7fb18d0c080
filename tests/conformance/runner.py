"""Run the reference's gabbi files against placement_lite and judge the result.

Every file runs in-process on a fresh database (tests/gabbi_runner.py) with
this package's fixtures. A test that does not pass gets a one-line reason,
grouped by cause: a route placement_lite does not serve yet, a fixture that
could not be built, a knock-on of an earlier request to an unbuilt route, or
the first line of the assertion that failed.

``expected_failures.txt`` lists the tests known not to pass; the ratchet
(test_ratchet.py) fails on any difference with it in either direction.
"""

import collections
import concurrent.futures
import dataclasses
import multiprocessing
import os
import re
import time

from tests.conformance import upstream

HERE = os.path.dirname(os.path.abspath(__file__))
EXPECTED_FAILURES = os.path.join(HERE, 'expected_failures.txt')
SEPARATOR = ' :: '

#: The reference's routes and the methods it declares on each.
REFERENCE_ROUTES = {
    '/': ('GET',),
    '/resource_classes': ('GET', 'POST'),
    '/resource_classes/{name}': ('GET', 'DELETE', 'PUT'),
    '/resource_providers': ('GET', 'POST'),
    '/resource_providers/{uuid}': ('GET', 'DELETE', 'PUT'),
    '/resource_providers/{uuid}/inventories': ('GET', 'POST', 'PUT',
                                               'DELETE'),
    '/resource_providers/{uuid}/inventories/{resource_class}': (
        'GET', 'DELETE', 'PUT'),
    '/resource_providers/{uuid}/usages': ('GET',),
    '/resource_providers/{uuid}/aggregates': ('GET', 'PUT'),
    '/resource_providers/{uuid}/allocations': ('GET',),
    '/allocations': ('POST',),
    '/allocations/{consumer_uuid}': ('GET', 'PUT', 'DELETE'),
    '/allocation_candidates': ('GET',),
    '/traits': ('GET',),
    '/traits/{name}': ('GET', 'PUT', 'DELETE'),
    '/resource_providers/{uuid}/traits': ('GET', 'PUT', 'DELETE'),
    '/usages': ('GET',),
    '/reshaper': ('POST',),
}

#: Prefixes of the reasons this module writes; any other reason in
#: expected_failures.txt was written by hand and is kept when regenerating.
GENERATED_PREFIXES = ('feature not built yet:', 'knock-on:',
                      'fixture setup fails:', 'differs:', 'error:')

_UUID = re.compile(r'[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?'
                   r'[0-9a-f]{12}', re.IGNORECASE)
_FIXTURE_REQUEST = re.compile(
    r'fixture setup: (?P<method>[A-Z]+) (?P<path>\S+) answered (?P<status>\d+)')
_REQUEST_ID = re.compile(r'req-<uuid>')


@dataclasses.dataclass
class TestResult:
    file: str
    name: str
    status: str  # passed, failed, error, skipped, xfailed (gabbi_runner)
    method: str
    url: str
    message: str = ''
    reason: str = ''

    @property
    def key(self):
        return (self.file, self.name)


def _template_regex(template):
    return re.compile('^' + re.sub(r'\\{[a-z_]+\\}', '[^/]+',
                                   re.escape(template)) + '$')


_REFERENCE_PATTERNS = [(template, _template_regex(template))
                       for template in REFERENCE_ROUTES]


def reference_route(path):
    """The reference's route template for ``path``, or None."""
    for template, pattern in _REFERENCE_PATTERNS:
        if pattern.match(path):
            return template
    return None


class ServedRoutes:
    """Which (method, path) placement_lite serves, from its own router."""

    def __init__(self):
        from placement_lite import app
        self._router = app.build_falcon_app()._router

    def serves(self, method, path):
        """Whether ``path`` is routed and (unless ``method`` is None) the
        resource answers ``method``."""
        found = self._router.find(path)
        if found is None:
            return False
        return method is None or hasattr(found[0], 'on_' + method.lower())


def _path_of(url):
    path = re.sub(r'^[a-z]+://[^/]+', '', url or '')
    return path.split('?', 1)[0] or '/'


def _unbuilt_route(served, method, url):
    """``METHOD /template`` when the request needs what is not built yet:
    a method the reference declares and placement_lite does not, or (for
    the reference's 405 answers) a route placement_lite does not have."""
    path = _path_of(url)
    template = reference_route(path)
    if template is None:
        return None
    declared = method in REFERENCE_ROUTES[template]
    if served.serves(method if declared else None, path):
        return None
    return '%s %s' % (method, template)


def _first_assertion(message):
    """The line that says what went wrong, without per-run values."""
    lines = [line.strip() for line in message.strip().splitlines()
             if line.strip()]
    chosen = ''
    for line in reversed(lines):
        if not line.startswith(('File ', 'Traceback', '^', '~')):
            chosen = line
            break
    for line in lines:
        if line.startswith(('AssertionError', 'gabbi.exception', 'Exception',
                            'KeyError', 'ValueError', 'TypeError')):
            chosen = line
            break
    chosen = _UUID.sub('<uuid>', chosen)
    return chosen[:160]


def classify(results, served):
    """Give every result that did not pass a reason (in place)."""
    first_unbuilt = None
    for result in results:
        if not counts_as_failure(result):
            continue
        fixture = _FIXTURE_REQUEST.search(result.message)
        if result.message.startswith('fixture failure') and fixture:
            route = _unbuilt_route(served, fixture['method'], fixture['path'])
            if route:
                result.reason = ('feature not built yet: %s (the fixture '
                                 'needs it)' % route)
            else:
                template = (reference_route(_path_of(fixture['path']))
                            or fixture['path'])
                result.reason = ('fixture setup fails: %s %s answered %s'
                                 % (fixture['method'], template,
                                    fixture['status']))
            continue
        route = _unbuilt_route(served, result.method, result.url)
        if route:
            result.reason = 'feature not built yet: %s' % route
            first_unbuilt = first_unbuilt or route
        elif first_unbuilt:
            result.reason = ('knock-on: an earlier request needs %s'
                             % first_unbuilt)
        elif result.status == 'error':
            result.reason = 'error: %s' % _first_assertion(result.message)
        else:
            result.reason = 'differs: %s' % _first_assertion(result.message)


def unique_names(names):
    """Test names, with ' (2)', ' (3)'... for names repeated in one file."""
    seen = collections.Counter()
    for name in names:
        seen[name] += 1
        yield name if seen[name] == 1 else '%s (%d)' % (name, seen[name])


def run_one_file(yaml_path, backend):
    """Run one file; returns (file name, [TestResult], seconds)."""
    from tests import gabbi_runner
    from tests.conformance import fixtures

    started = time.monotonic()
    outcomes = gabbi_runner.run_file(yaml_path, backend, fixtures)
    name = os.path.basename(yaml_path)
    results = [TestResult(name, unique, outcome.status, outcome.method,
                          outcome.url, outcome.message)
               for unique, outcome in zip(unique_names(o.name for o in outcomes),
                                   outcomes)]
    classify(results, ServedRoutes())
    return name, results, time.monotonic() - started


def run(backend='sqlite', jobs=None, select=None):
    """Run the selected upstream files; returns {file: ([TestResult], secs)}.

    ``jobs`` worker processes (default: the CPU count) each take whole files,
    biggest first; each worker has its own databases (and, for PostgreSQL,
    its own throwaway server).
    """
    paths = upstream.yaml_files()
    if select:
        paths = [path for path in paths
                 if any(word in os.path.basename(path) for word in select)]
    paths.sort(key=os.path.getsize, reverse=True)
    jobs = max(1, min(jobs or os.cpu_count() or 1, len(paths) or 1))
    results = {}
    if jobs == 1:
        for path in paths:
            name, file_results, seconds = run_one_file(path, backend)
            results[name] = (file_results, seconds)
        return results
    context = multiprocessing.get_context('spawn')
    with concurrent.futures.ProcessPoolExecutor(jobs, context) as pool:
        futures = [pool.submit(run_one_file, path, backend) for path in paths]
        for future in concurrent.futures.as_completed(futures):
            name, file_results, seconds = future.result()
            results[name] = (file_results, seconds)
    return results


def read_expected(path=EXPECTED_FAILURES):
    """{(file, test name): reason} from expected_failures.txt."""
    expected = {}
    if not os.path.exists(path):
        return expected
    with open(path, encoding='utf-8') as handle:
        for number, line in enumerate(handle, 1):
            line = line.rstrip('\n')
            if not line.strip() or line.startswith('#'):
                continue
            parts = line.split(SEPARATOR)
            if len(parts) != 3:
                raise ValueError('%s:%d: expected "file%stest%sreason"'
                                 % (path, number, SEPARATOR, SEPARATOR))
            expected[(parts[0], parts[1])] = parts[2]
    return expected


def write_expected(results, path=EXPECTED_FAILURES):
    """Write every test that did not pass, grouped by reason.

    Hand-written reasons (not starting with a generated prefix) of tests
    that still fail are kept.
    """
    previous = read_expected(path)
    failing = []
    for file_results, _seconds in results.values():
        for index, result in enumerate(file_results):
            if not counts_as_failure(result):
                continue
            reason = previous.get(result.key, '')
            if not reason or reason.startswith(GENERATED_PREFIXES):
                reason = result.reason
            failing.append((reason, result.file, index, result.name))
    by_reason = collections.Counter(reason for reason, *_rest in failing)
    failing.sort(key=lambda item: (-by_reason[item[0]],) + item)
    with open(path, 'w', encoding='utf-8') as handle:
        handle.write(
            '# Upstream (openstack-placement %s) gabbi tests that do not pass '
            'against\n# placement_lite yet: "file :: test :: reason", one a '
            'line, grouped by reason.\n# The ratchet (test_ratchet.py) fails '
            'on a failure not listed here and on a\n# listed test that '
            'passes. Regenerate: python -m tests.conformance '
            '--write-expected\n# (hand-written reasons are kept).\n#\n'
            % upstream.VERSION)
        for reason, count in sorted(by_reason.items(),
                                    key=lambda item: (-item[1], item[0])):
            handle.write('# %5d  %s\n' % (count, reason))
        for reason, file_name, _index, name in failing:
            handle.write(SEPARATOR.join((file_name, name, reason)) + '\n')
    return len(failing)


def counts_as_failure(result):
    """Failed or errored; a test the YAML itself skips is neither."""
    return result.status in ('failed', 'error')


def compare(file_results, expected):
    """(unexpected failures, listed tests that passed) for some files."""
    unexpected, fixed = [], []
    for result in file_results:
        listed = result.key in expected
        if counts_as_failure(result) and not listed:
            unexpected.append(result)
        elif not counts_as_failure(result) and listed:
            fixed.append(result)
    return unexpected, fixed
