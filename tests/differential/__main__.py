"""Differential run against the reference: ``python -m tests.differential``.

    python -m tests.differential --worlds 100 --requests 200
    python -m tests.differential --backend sqlite --seed 7 --only 42

Prints one line per difference not listed in api-ref/divergences.md (its
reproduction, shrunk unless --no-shrink), then the totals; exits 1 when
there is any.
"""

import argparse
import collections
import sys
import time

from tests import harness
from tests.differential import runner
from tests.differential import shrink


#: The backends both services run on here: the reference's virtual
#: environment has no MySQL driver.
BACKENDS = tuple(name for name in harness.BACKENDS if name != 'mysql')


def main(argv=None):
    parser = argparse.ArgumentParser(prog='python -m tests.differential')
    parser.add_argument('--backend', action='append', choices=BACKENDS,
                        help='default: %s' % ' and '.join(BACKENDS))
    parser.add_argument('--worlds', type=int, default=10)
    parser.add_argument('--first-seed', type=int, default=0)
    parser.add_argument('--seed', type=int,
                        help='run this one world (as --first-seed S '
                             '--worlds 1)')
    parser.add_argument('--requests', type=int, default=200,
                        help='generated requests per world')
    parser.add_argument('--only', type=int,
                        help='send only this request after the build')
    parser.add_argument('--drop', default='',
                        help='parts of the world left out, e.g. '
                             'tree:0,consumer:2')
    parser.add_argument('--no-shrink', action='store_true')
    parser.add_argument('--show-listed', action='store_true',
                        help='print listed differences too')
    args = parser.parse_args(argv)
    seeds = ([args.seed] if args.seed is not None else
             range(args.first_seed, args.first_seed + args.worlds))
    drop = frozenset((kind, int(index)) for kind, index in (
        part.split(':') for part in args.drop.split(',') if part))
    unlisted = 0
    for backend in args.backend or BACKENDS:
        started = time.monotonic()
        run = runner.Run(backend)
        listed = collections.Counter()
        sent = 0
        try:
            for seed in seeds:
                differences = run.world(seed, args.requests, drop,
                                        args.only)
                sent += 1 if args.only is not None else args.requests
                for difference in differences:
                    if difference.listed:
                        listed[difference.listed] += 1
                        if args.show_listed:
                            print('listed (%s): %s' % (
                                difference.listed,
                                difference.reproduction()))
                        continue
                    unlisted += 1
                    if not args.no_shrink:
                        difference = shrink.shrink(run, difference,
                                                   args.requests)
                    print('UNLISTED: ' + difference.reproduction(),
                          flush=True)
        finally:
            run.close()
        print('%s: %d worlds, %d requests, listed %s, %.0f s' % (
            backend, len(seeds), sent, dict(listed) or 0,
            time.monotonic() - started), flush=True)
    print('%d unlisted differences' % unlisted)
    return 1 if unlisted else 0


if __name__ == '__main__':
    sys.exit(main())
