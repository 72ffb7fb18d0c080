"""Run some of nova's functional tests; runs inside nova's environment.

    python -m tests.nova.runner --report FILE [--reference | --list]
        [--exclude NAME]... NAME...

Each NAME is a dotted package, module, class or test name of nova's
(``nova.tests.functional.test_report_client``) or a module's or
package's path (``nova/tests/functional/test_report_client.py``,
``nova/tests/functional/regressions``). Tests run one after
the other in this process, as nova's own runner runs each of its workers'
share. Against placement_lite (the default) under the project's
generation guard (tests/generation_guard.py): a write it catches fails the
test that made it. With ``--reference``, nova's fixture is left as nova
ships it: the reference serves.

FILE gets a JSON object: ``placement`` (what served), ``reference_loaded``
(whether any module of the reference was imported) and ``tests``, one
entry per test in the order run, with its ``id``, ``outcome`` (one of
:data:`OUTCOMES`), ``seconds``, ``requests`` (how many placement_lite
answered during it; null against the reference) and ``detail`` (the
traceback, or why it was skipped). The exit status is 0 when no test
failed. With ``--list``, nothing runs: FILE gets ``{"ids": [...]}``, the
tests' names.
"""

import argparse
import importlib.util
import json
import pkgutil
import sys
import time
import unittest

OUTCOMES = ('passed', 'failed', 'skipped', 'expected failure')


def test_name(name):
    """A dotted name for ``name``, a dotted name or a module's or
    package's path."""
    if name.endswith('.py'):
        name = name[:-len('.py')]
    return name.rstrip('/').replace('/', '.')


def test_modules(name):
    """``[name]``, or when ``name`` is a package, its test modules (named
    ``test_*``, in it or in its subpackages)."""
    try:
        spec = importlib.util.find_spec(name)
    except ModuleNotFoundError:
        spec = None
    if spec is None or spec.submodule_search_locations is None:
        return [name]
    return sorted(
        found.name for found in pkgutil.walk_packages(
            spec.submodule_search_locations, name + '.')
        if found.name.rsplit('.', 1)[-1].startswith('test_'))


def load(names, exclude):
    """The tests ``names`` name, without those ``exclude`` names (a test,
    or a class, module or package holding it)."""
    loader = unittest.TestLoader()
    tests = []
    for name in names:
        for module in test_modules(test_name(name)):
            tests.extend(_each(loader.loadTestsFromName(module)))
    left_out = tuple(test_name(name) for name in exclude)
    return unittest.TestSuite(
        test for test in tests if not any(
            test.id() == name or test.id().startswith(name + '.')
            for name in left_out))


def _each(suite):
    if isinstance(suite, unittest.TestSuite):
        for child in suite:
            yield from _each(child)
    else:
        yield suite


class Recorder(unittest.TestResult):
    """Each test's outcome, time and placement_lite requests, as
    :mod:`tests.nova.runner` reports them, printed as they come."""

    def __init__(self, count_requests, caught_writes):
        """``count_requests()``: placement_lite's requests so far (None
        against the reference); ``caught_writes``: the generation guard's
        list of caught writes (None against the reference)."""
        super().__init__()
        self.count_requests = count_requests
        self.caught_writes = caught_writes
        self.entries = []
        self._current = None

    def startTest(self, test):
        super().startTest(test)
        self._current = {
            'id': test.id(), 'outcome': 'passed', 'detail': '',
            'started': time.monotonic(), 'requests': self.count_requests(),
            'caught': len(self.caught_writes or ())}

    def stopTest(self, test):
        super().stopTest(test)
        entry = self._current
        entry['seconds'] = round(time.monotonic() - entry.pop('started'), 3)
        if entry['requests'] is not None:
            entry['requests'] = self.count_requests() - entry['requests']
        caught = (self.caught_writes or [])[entry.pop('caught'):]
        if caught and entry['outcome'] != 'failed':
            self._set('failed', 'generation guard: ' + '; '.join(caught))
        self.entries.append(entry)
        self._current = None
        print('%-16s %s (%.1f s)' % (entry['outcome'].upper(), entry['id'],
                                     entry['seconds']),
              file=sys.__stdout__, flush=True)

    def _set(self, outcome, detail):
        self._current['outcome'] = outcome
        self._current['detail'] = detail

    def _error(self, test, err):
        text = self._exc_info_to_string(err, test)
        if self._current is None:
            # A class's or module's set-up or tear-down failed: no test of
            # it was started, so it is reported as a test of its own.
            self.entries.append({'id': str(test), 'outcome': 'failed',
                                 'detail': text, 'seconds': 0.0,
                                 'requests': None})
        else:
            self._set('failed', text)

    def addError(self, test, err):
        super().addError(test, err)
        self._error(test, err)

    def addFailure(self, test, err):
        super().addFailure(test, err)
        self._error(test, err)

    def addSkip(self, test, reason):
        super().addSkip(test, reason)
        self._set('skipped', reason)

    def addExpectedFailure(self, test, err):
        super().addExpectedFailure(test, err)
        self._set('expected failure', self._exc_info_to_string(err, test))

    def addUnexpectedSuccess(self, test):
        super().addUnexpectedSuccess(test)
        self._set('failed', 'passed, but is marked as an expected failure')


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--report', required=True)
    parser.add_argument('--reference', action='store_true')
    parser.add_argument('--list', action='store_true')
    parser.add_argument('--exclude', action='append', default=[])
    parser.add_argument('names', nargs='+')
    args = parser.parse_args(argv)

    # nova monkey-patches for eventlet when first imported: before
    # placement_lite and SQLAlchemy, as in nova's own test runs.
    import nova  # noqa: F401

    if args.list:
        ids = [test.id() for test in load(args.names, args.exclude)]
        with open(args.report, 'w') as out:
            json.dump({'ids': ids}, out)
        return 0
    if args.reference:
        recorder = Recorder(lambda: None, None)
    else:
        from tests import generation_guard
        from tests.nova import fixture
        fixture.install()
        generation_guard.install()
        recorder = Recorder(lambda: fixture.requests_served,
                            generation_guard.caught)
    load(args.names, args.exclude).run(recorder)
    report = {
        'placement': 'reference' if args.reference else 'placement_lite',
        'reference_loaded': any(
            name == 'placement' or name.startswith('placement.')
            for name, module in sys.modules.items()
            if getattr(module, '__file__', None)),
        'tests': recorder.entries,
    }
    with open(args.report, 'w') as out:
        json.dump(report, out, indent=1)
    failed = [entry for entry in recorder.entries
              if entry['outcome'] == 'failed']
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
