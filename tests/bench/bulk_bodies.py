"""Time the largest bulk bodies the size limit admits, in-process.

    python -m tests.bench.bulk_bodies                        # SQLite and PostgreSQL
    python -m tests.bench.bulk_bodies --backend sqlite --only inventories_unknown_classes
    python -m tests.bench.bulk_bodies --backend postgresql --profile traits_many

Seeds the world of tests/bulk_bodies.py into a fresh database (the
harness's throwaway PostgreSQL for ``postgresql``), sets the garbage
collector as a served process sets it (placement_lite.wsgi), then sends each body
(``--repetitions`` times, each body made afresh for the world as it is)
to the application in-process and prints, per body, its answer, its size,
the fastest and median wall time of the request alone and the least CPU
time this process spent on it (on SQLite, all of the work: the difference
is time the machine gave to others). ``--profile`` runs one body under
cProfile and prints where its time went.
"""

import argparse
import cProfile
import json
import logging
import pstats
import statistics
import time

from placement_lite import app as placement_app
from tests import bulk_bodies
from tests import harness

NAMES = [case.name for case in bulk_bodies.CASES]


def parse_args(argv=None):
    parser = argparse.ArgumentParser(prog='python -m tests.bench.bulk_bodies',
                                     description=__doc__.split('\n')[0])
    parser.add_argument('--backend', nargs='+', default=['sqlite', 'postgresql'],
                        choices=['sqlite', 'postgresql', 'mysql'])
    parser.add_argument('--repetitions', type=int, default=3)
    parser.add_argument('--only', nargs='+', choices=NAMES, metavar='NAME',
                        help='time these bodies only: %s' % ', '.join(NAMES))
    parser.add_argument('--profile', choices=NAMES, metavar='NAME',
                        help='run this body once under cProfile')
    return parser.parse_args(argv)


def send(world, case):
    """(status, error code or '', body size, seconds, seconds of this
    process's CPU) of one request."""
    body = case.body(world)
    started, cpu = time.perf_counter(), time.process_time()
    status, _headers, raw = world.env.respond(
        case.method, case.url(world), body, version=case.version,
        headers=bulk_bodies.ROLES)
    elapsed = time.perf_counter() - started
    cpu = time.process_time() - cpu
    code = json.loads(raw)['errors'][0].get('code') if status >= 400 else ''
    return status, code, len(body), elapsed, cpu


def profile(world, case):
    body = case.body(world)
    profiler = cProfile.Profile()
    profiler.enable()
    world.env.respond(case.method, case.url(world), body,
                      version=case.version, headers=bulk_bodies.ROLES)
    profiler.disable()
    pstats.Stats(profiler).sort_stats('cumulative').print_stats(40)


def run(backend, args):
    # What the requests log goes nowhere: over-capacity warnings name
    # 42,000 classes.
    logging.getLogger('placement_lite').addHandler(logging.NullHandler())
    logging.getLogger('placement_lite').propagate = False
    env = harness.Environment(backend)
    try:
        world = bulk_bodies.seed(env)
        # The collector as a served process has it (placement_lite.wsgi).
        placement_app.tune_garbage_collector()
        if args.profile:
            profile(world, next(case for case in bulk_bodies.CASES
                                if case.name == args.profile))
            return
        print('%s\n%-36s %6s %-36s %8s %7s %8s %7s' % (
            backend, 'body', 'status', 'code', 'bytes', 'min s',
            'median s', 'cpu s'))
        for case in bulk_bodies.CASES:
            if args.only and case.name not in args.only:
                continue
            times, cpus = [], []
            for _ in range(args.repetitions):
                status, code, size, elapsed, cpu = send(world, case)
                times.append(elapsed)
                cpus.append(cpu)
            print('%-36s %6d %-36s %8d %7.3f %8.3f %7.3f' % (
                case.name, status, code, size, min(times),
                statistics.median(times), min(cpus)), flush=True)
    finally:
        env.close()


def main(argv=None):
    args = parse_args(argv)
    for backend in args.backend:
        run(backend, args)


if __name__ == '__main__':
    main()
