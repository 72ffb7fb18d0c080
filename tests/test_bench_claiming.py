"""The claiming scheduler of the boot storm (tests/bench/claiming.py),
in-process on a tiny benchmark cloud."""

import collections
import json

from tests.bench import claiming
from tests.bench import cloud as bench_cloud
from tests.bench import storm as bench_storm
from tests import test_bench


class _TakenFirst(test_bench._InProcess):
    """Answers the first claim with a 409 saying every candidate was
    taken, as a claim that lost its candidates in each search would."""

    def __init__(self, environment):
        super().__init__(environment)
        self.refusals = 1

    def fetch(self, method, path, body=None, version='1.39'):
        if self.refusals:
            self.refusals -= 1
            return 409, json.dumps({'errors': [{
                'code': 'placement.concurrent_update',
                'detail': '...'}]}).encode(), 0.001
        return super().fetch(method, path, body, version)


def test_a_claiming_scheduler_places_with_one_request(environment):
    cloud = test_bench._written(environment)
    kinds = bench_storm.provider_kinds(cloud)
    scheduler = claiming.ClaimingScheduler(_TakenFirst(environment), kinds)
    first, second = (bench_cloud.make_uuid('claim-%d' % number)
                     for number in range(2))

    record = scheduler.place(first)
    assert (record['placed'], record['conflicts'], record['reasks'],
            record['candidates'], len(record['claims'])) == (
                True, ['every candidate taken'], 1, [], 2)
    assert record['vcpu_on'] in ('numa0', 'numa1')
    record = scheduler.place(second)
    assert (record['placed'], record['conflicts'], len(record['claims'])) == (
        True, [], 1)
    for consumer in (first, second):
        held = environment.request('GET', '/allocations/%s' % consumer,
                                   version='1.36')[2]['allocations']
        amounts = collections.Counter()
        for given in held.values():
            amounts.update(given['resources'])
        assert amounts == bench_storm.FLAVOR
