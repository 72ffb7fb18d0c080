"""Run any of nova's functional tests against placement_lite.

    python -m tests.nova [--reference | --compare] [--jobs N]
        [--exclude NAME]... NAME...

NAME is one of nova's test packages or modules, by path
(``nova/tests/functional/test_servers.py``, ``nova/tests/functional``) or
dotted name, or a class or test in one
(``nova.tests.functional.test_servers.ServersTest``). The
tests are shared out, a class's tests together, among ``--jobs``
processes (default: one per core). ``--reference`` runs them against the
reference instead, as nova ships them; ``--compare`` against both, then
lists the tests whose outcomes differ. Prints each module's counts and
every failure; the runners' full reports stay in the directory it names.
Exits with 1 when a test failed (with ``--compare``: against
placement_lite).
"""

import argparse
import collections
import concurrent.futures
import os
import sys
import tempfile
import time

from tests.nova import environment

TARGETS = {'placement_lite': False, 'reference': True}


def share_out(ids, jobs):
    """``ids`` in at most ``jobs`` lists, each class's tests in one list,
    the lists about as long as each other."""
    classes = collections.defaultdict(list)
    for test_id in ids:
        classes[test_id.rsplit('.', 1)[0]].append(test_id)
    shares = [[] for _ in range(max(1, jobs))]
    for tests in sorted(classes.values(), key=len, reverse=True):
        min(shares, key=len).extend(tests)
    return [share for share in shares if share]


def run_everywhere(interpreter, shares, reference, directory):
    """Every share in a runner process of its own, at once; the tests'
    entries, in the order of ``shares``."""
    name = 'reference' if reference else 'placement_lite'
    with concurrent.futures.ThreadPoolExecutor(len(shares)) as pool:
        reports = pool.map(
            lambda numbered: environment.run(
                interpreter, numbered[1],
                os.path.join(directory, '%s-%d.json' % (name, numbered[0])),
                reference=reference),
            enumerate(shares))
        return [test for report in reports for test in report['tests']]


def summary(name, tests, seconds):
    """Lines telling how ``tests`` went against ``name``: the counts of
    each module, then every failure's detail."""
    modules = collections.defaultdict(collections.Counter)
    for test in tests:
        module = test['id'].split('.')
        modules['.'.join(module[:-2])][test['outcome']] += 1
    total = collections.Counter(test['outcome'] for test in tests)
    lines = ['%s: %s in %.0f s' % (name, _counts(total), seconds)]
    lines += ['  %s: %s' % (module, _counts(counts))
              for module, counts in sorted(modules.items())]
    for test in tests:
        if test['outcome'] == 'failed':
            lines += ['', 'FAILED against %s: %s' % (name, test['id']),
                      test['detail'][-4000:]]
    return lines


def _counts(counter):
    return '%d ran, %d passed, %d failed, %d skipped' % (
        sum(counter.values()), counter['passed'], counter['failed'],
        counter['skipped'])


def differences(outcomes):
    """Lines naming each test whose outcome is not the same against every
    target of ``outcomes`` ({target: {test id: outcome}})."""
    targets = list(outcomes)
    ids = sorted(set().union(*outcomes.values()))
    lines = []
    for test_id in ids:
        seen = [outcomes[target].get(test_id, 'not run')
                for target in targets]
        if len(set(seen)) > 1:
            lines.append('  %s: %s' % (test_id, ', '.join(
                '%s against %s' % pair for pair in zip(seen, targets))))
    header = 'outcomes that differ: %d' % len(lines)
    return [header] + lines


def main(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__.split('\n')[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__.split('\n\n', 2)[2])
    which = parser.add_mutually_exclusive_group()
    which.add_argument('--reference', action='store_true')
    which.add_argument('--compare', action='store_true')
    parser.add_argument('--jobs', '-j', type=int, default=os.cpu_count())
    parser.add_argument('--exclude', action='append', default=[])
    parser.add_argument('names', nargs='+')
    args = parser.parse_args(argv)

    interpreter, _seconds = environment.python()
    directory = tempfile.mkdtemp(prefix='nova-run-',
                                 dir=environment.BENCH_DIR)
    ids = environment.list_tests(interpreter, args.names,
                                 os.path.join(directory, 'list.json'),
                                 args.exclude)
    shares = share_out(ids, args.jobs)
    if args.compare:
        targets = list(TARGETS)
    else:
        targets = ['reference' if args.reference else 'placement_lite']
    outcomes = {}
    for target in targets:
        started = time.monotonic()
        tests = run_everywhere(interpreter, shares, TARGETS[target],
                               directory)
        print('\n'.join(summary(target, tests, time.monotonic() - started)),
              flush=True)
        outcomes[target] = {test['id']: test['outcome'] for test in tests}
    if args.compare:
        print('\n'.join(differences(outcomes)))
    print('reports in %s' % directory)
    return 1 if 'failed' in outcomes[targets[0]].values() else 0


if __name__ == '__main__':
    sys.exit(main())
