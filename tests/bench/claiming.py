"""A boot storm of claiming schedulers (1.43) beside nova's, and a batch
with anti-affinity, timed.

    python -m tests.bench.claiming --hosts 1000 5000 --schedulers 32

The claiming scheduler places an instance with one request: ``POST
/allocation_claims`` with nova's flavor request (tests/bench/storm.py),
ranked as nova's RAM weigher ranks hosts (``rank_by=spread:MEMORY_MB``),
and the instance as the consumer. The service claims the best host and,
when a concurrent claim took it first, the next best, in the same
request. On a 409 saying every candidate was taken it asks again (up to
storm.REASKS); a 409 saying nothing fits is the instance's failure.

For each size: the nova-pattern storm (storm.Scheduler) and the claiming
one, each on a fresh copy of the same cloud, one after the other on
placement_lite only (4 uwsgi workers); then BATCHES batches of 100
instances on distinct hosts (``trees=distinct``), one request each, on
another copy. Reported in reports/claim-storm-<hosts>.json: what
storm.storm reports (instances per second, time to place p50 and p99,
409s by reason: for claims, the candidates refused at commit inside the
request, ``refused at commit``), and the batches' times.
"""

import argparse
import datetime
import json
import os
import sys
import time
import urllib.parse

from tests.bench import cloud as bench_cloud
from tests.bench import services
from tests.bench import storm

VERSION = '1.43'
CLAIM = '/allocation_claims?' + urllib.parse.urlencode({
    'resources': ','.join('%s:%d' % item for item in storm.FLAVOR.items()),
    'required': '!COMPUTE_STATUS_DISABLED',
    'rank_by': 'spread:MEMORY_MB'})
#: Instances in one anti-affinity batch, and how many batches are timed.
BATCH = 100
BATCHES = 5


def claim_body(consumers, trees=None):
    """The body claiming for ``consumers`` (uuids), owned as storm's
    instances are."""
    body = {'consumers': {consumer: {
        'project_id': storm.PROJECT, 'user_id': storm.USER,
        'consumer_generation': None, 'consumer_type': 'INSTANCE'}
        for consumer in consumers}}
    if trees:
        body['trees'] = trees
    return body


class ClaimingScheduler:
    """One scheduler process placing instances with claims: the record of
    each is storm.Scheduler's."""

    def __init__(self, client, kinds):
        self.client = client
        self.kinds = kinds

    def place(self, consumer):
        record = {'candidates': [], 'claims': [], 'conflicts': [],
                  'reasks': 0, 'placed': False, 'vcpu_on': None}
        started = time.perf_counter()
        for ask in range(1 + storm.REASKS):
            record['reasks'] = ask
            try:
                status, raw, seconds = self.client.fetch(
                    'POST', CLAIM, claim_body([consumer]), version=VERSION)
            except TimeoutError:
                record['error'] = 'claim: no answer within %d s' % (
                    self.client.timeout)
                break
            record['claims'].append(seconds)
            if status == 200:
                answer = json.loads(raw)
                record['conflicts'] += ['refused at commit'] * answer[
                    'refused']
                allocations = answer['claims'][consumer]['allocations']
                record['placed'] = True
                record['vcpu_on'] = next(
                    self.kinds.get(uuid) for uuid, held
                    in allocations.items() if 'VCPU' in held['resources'])
                break
            if status != 409 or json.loads(raw)['errors'][0].get(
                    'code') != 'placement.concurrent_update':
                record['error'] = 'claim: %d %s' % (status, raw[:200])
                break
            record['conflicts'].append('every candidate taken')
        record['seconds'] = time.perf_counter() - started
        return record


def batches(service, count=BATCHES, size=BATCH):
    """The seconds of ``count`` claims of ``size`` instances each on
    distinct hosts, one after another; and the statuses."""
    client = services.HttpClient(service.port, timeout=300)
    seconds, statuses = [], []
    for number in range(count):
        consumers = [bench_cloud.make_uuid('batch-%d-%d' % (number, index))
                     for index in range(size)]
        status, _raw, took = client.fetch(
            'POST', CLAIM, claim_body(consumers, 'distinct'),
            version=VERSION)
        seconds.append(took)
        statuses.append(status)
    return seconds, statuses


def run(hosts, schedulers, instances, log=print):
    """The storms and batches at one size; the report, also written to
    reports/claim-storm-<hosts>.json."""
    cloud = bench_cloud.build(hosts)
    kinds = storm.provider_kinds(cloud)
    fresh = storm.Hosts(cloud)
    templates, build_seconds = services.cloud_templates(
        cloud, ['placement_lite'], None, 'claim', log)
    template = templates['placement_lite']
    report = {'hosts': hosts, 'providers': len(cloud.providers),
              'build_seconds': round(build_seconds, 1), 'storms': [],
              'date': datetime.datetime.now(datetime.timezone.utc).strftime(
                  '%Y-%m-%d %H:%M UTC'), 'load': os.getloadavg()[0]}

    def started(kind):
        return services.start_on_copy(
            'placement_lite', template,
            'claim_%s_%d_%d' % (kind, hosts, os.getpid()), None)

    for count in schedulers:
        for name, scheduler in (('nova', storm.Scheduler),
                                ('claiming', ClaimingScheduler)):
            service = started(name)
            try:
                log('%s schedulers: %d placing %d instances on %d hosts'
                    % (name, count, instances, hosts))
                result = storm.storm(service, kinds, fresh, count,
                                     instances, scheduler=scheduler)
            finally:
                service.stop()
            result['service'] = 'placement_lite, %s' % name
            report['storms'].append(result)
            log(storm.summary(result))
    service = started('batch')
    try:
        seconds, statuses = batches(service)
    finally:
        service.stop()
    report['batches'] = {'size': BATCH, 'seconds': seconds,
                         'statuses': statuses,
                         'p50': services.percentile(seconds, 0.5)}
    log('%d batches of %d on distinct hosts: p50 %.0f ms, statuses %s'
        % (len(seconds), BATCH, 1000 * report['batches']['p50'], statuses))
    report['load_after'] = os.getloadavg()[0]
    os.makedirs(storm.REPORTS, exist_ok=True)
    with open(os.path.join(storm.REPORTS, 'claim-storm-%d.json' % hosts),
              'w') as out:
        json.dump(report, out, indent=1)
    return report


def main(argv=None):
    parser = argparse.ArgumentParser(prog='python -m tests.bench.claiming',
                                     description=__doc__.split('\n')[0])
    parser.add_argument('--hosts', type=int, nargs='+', default=[1000])
    parser.add_argument('--schedulers', type=int, nargs='+', default=[32])
    parser.add_argument('--instances', type=int, default=1000)
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    for hosts in args.hosts:
        run(hosts, args.schedulers, args.instances)


if __name__ == '__main__':
    main()
