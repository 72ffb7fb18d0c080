"""python -m tests.conformance: the reference's gabbi suite against placement_lite.

Prints a table per file (tests, passed, failed, skipped) and the totals,
writes them with every test's outcome and reason as JSON, and compares the
failures with expected_failures.txt: exit status 1 when a test fails that is
not listed there or a listed test passes (0 with ``--write-expected``, which
rewrites the list from this run instead).
"""

import argparse
import json
import os
import sys
import time

from tests import harness
from tests.conformance import runner
from tests.conformance import upstream


def _parse_args(argv):
    parser = argparse.ArgumentParser(prog='python -m tests.conformance',
                                     description=__doc__.splitlines()[0])
    parser.add_argument('--backend', choices=harness.BACKENDS,
                        default='sqlite', help='database (default: sqlite)')
    parser.add_argument('--jobs', '-j', type=int, default=None,
                        help='worker processes (default: one per CPU)')
    parser.add_argument('--json', default=os.path.join(
        upstream.REPO_ROOT, 'reports', 'conformance.json'),
        help='where to write the JSON report')
    parser.add_argument('--write-expected', action='store_true',
                        help='rewrite expected_failures.txt from this run '
                             '(all files only)')
    parser.add_argument('--show', action='store_true',
                        help='print the message of every failure')
    parser.add_argument('files', nargs='*',
                        help='run only the files whose name contains one of '
                             'these words')
    return parser.parse_args(argv)


def _table(results):
    rows = []
    totals = {'tests': 0, 'passed': 0, 'failed': 0, 'skipped': 0,
              'xfailed': 0}
    for name in sorted(results):
        file_results, seconds = results[name]
        row = {'file': name, 'tests': len(file_results),
               'passed': sum(r.status == 'passed' for r in file_results),
               'failed': sum(runner.counts_as_failure(r)
                             for r in file_results),
               'skipped': sum(r.status == 'skipped' for r in file_results),
               'xfailed': sum(r.status == 'xfailed' for r in file_results),
               'seconds': round(seconds, 2)}
        rows.append(row)
        for key in totals:
            totals[key] += row[key]
    totals['files'] = len(rows)
    return rows, totals


def _print_table(rows, totals, out):
    width = max([len(row['file']) for row in rows] + [len('TOTAL')])
    line = '%-*s %6s %6s %6s %6s %6s'
    out.write(line % (width, 'file', 'tests', 'passed', 'failed', 'skip',
                      'xfail') + '\n')
    for row in rows + [dict(totals, file='TOTAL')]:
        out.write(line % (width, row['file'], row['tests'], row['passed'],
                          row['failed'], row['skipped'], row['xfailed'])
                  + '\n')
    out.write('%d files, %d tests: %d passed, %d failed, %d skipped, '
              '%d xfailed\n'
              % (totals['files'], totals['tests'], totals['passed'],
                 totals['failed'], totals['skipped'], totals['xfailed']))


def _write_json(path, backend, rows, totals, results, seconds):
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    document = {
        'upstream': '%s==%s' % (upstream.PACKAGE, upstream.VERSION),
        'backend': backend, 'seconds': round(seconds, 1),
        'totals': totals, 'files': rows,
        'tests': [{'file': r.file, 'name': r.name, 'status': r.status,
                   'reason': r.reason}
                  for name in sorted(results) for r in results[name][0]],
    }
    with open(path, 'w', encoding='utf-8') as handle:
        json.dump(document, handle, indent=1)
        handle.write('\n')


def main(argv=None):
    args = _parse_args(sys.argv[1:] if argv is None else argv)
    if args.write_expected and args.files:
        sys.exit('--write-expected needs the whole suite: give no file names')
    started = time.monotonic()
    results = runner.run(args.backend, args.jobs, args.files)
    seconds = time.monotonic() - started
    rows, totals = _table(results)
    _print_table(rows, totals, sys.stdout)
    _write_json(args.json, args.backend, rows, totals, results, seconds)
    print('%s backend, %.1fs; report: %s' % (args.backend, seconds, args.json))
    all_results = [r for name in sorted(results) for r in results[name][0]]
    if args.show:
        for result in all_results:
            if runner.counts_as_failure(result):
                print('\n=== %s :: %s [%s]\n%s' % (result.file, result.name,
                                                  result.reason,
                                                  result.message))
    if args.write_expected:
        count = runner.write_expected(results)
        print('wrote %d expected failures to %s'
              % (count, runner.EXPECTED_FAILURES))
        return 0
    unexpected, fixed = runner.compare(all_results, runner.read_expected())
    for result in unexpected:
        print('UNEXPECTED FAILURE %s :: %s (%s)'
              % (result.file, result.name, result.reason))
    for result in fixed:
        print('NOW PASSES (remove from expected_failures.txt) %s :: %s'
              % (result.file, result.name))
    if unexpected or fixed:
        print('%d unexpected failures, %d listed tests now pass'
              % (len(unexpected), len(fixed)))
        return 1
    print('failures match expected_failures.txt')
    return 0


if __name__ == '__main__':
    sys.exit(main())
