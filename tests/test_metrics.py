"""/metrics in one process: who may read it, what each count counts,
every name following Prometheus' rules, and the sample Grafana dashboard
and Prometheus files of etc/ naming only metrics that exist."""

import json
import os
import re
import subprocess
import uuid

import pytest
import yaml

from placement_lite.db import providers as providers_db
from placement_lite.metrics import collect
from tests import harness
from tests import metrics_scrape
from tests import promlint
from tests import provision
from tests import servers

ENABLED = {'metrics.enabled': True}


@pytest.fixture
def counted(backend):
    env = harness.Environment(backend, **ENABLED)
    yield env
    env.close()


def _provider(env, vcpus, name=None):
    provider = str(uuid.uuid4())
    assert env.request('POST', '/resource_providers', {
        'name': name or provider, 'uuid': provider})[0] == 200
    assert env.request('PUT', '/resource_providers/%s/inventories' % provider,
                       {'resource_provider_generation': 0,
                        'inventories': {'VCPU': {'total': vcpus}}})[0] == 200
    return provider


def test_off_by_default_as_in_the_reference(environment):
    assert environment.request('GET', '/metrics')[0] == 404


@pytest.mark.parametrize('address, status', [
    ('127.0.0.1', 200), ('::1', 200), ('::ffff:127.0.0.1', 200),
    ('10.0.0.7', 403), ('', 403), ('not an address', 403)])
def test_only_the_allowed_networks_may_read_it(counted, address, status):
    got, _headers, body = metrics_scrape.get(counted, '/metrics', address)
    assert got == status
    if status == 403:
        assert json.loads(body) == {'errors': [{
            'status': 403, 'title': 'Forbidden',
            'detail': '/metrics is served only to [metrics] '
                      'allowed_networks.'}]}


def test_configured_networks(backend):
    env = harness.Environment(backend, **ENABLED, **{
        'metrics.allowed_networks': ['10.0.0.0/8']})
    try:
        assert metrics_scrape.get(env, '/metrics', '10.1.2.3')[0] == 200
        assert metrics_scrape.get(env, '/metrics', '127.0.0.1')[0] == 403
    finally:
        env.close()


def test_a_bad_network_is_named(backend):
    with pytest.raises(ValueError, match=r'^\[metrics\] allowed_networks: '
                                         r"'10\.0\.0\.0/33' does not appear"):
        harness.Environment(backend, **ENABLED, **{
            'metrics.allowed_networks': ['10.0.0.0/33']})


def test_only_get_and_head(counted):
    assert metrics_scrape.get(counted, '/metrics', method='HEAD')[0] == 200
    status, headers, _body = metrics_scrape.get(counted, '/metrics',
                                                method='POST')
    assert (status, headers['Allow']) == (405, 'GET')


def test_requests_by_route_template_never_by_path(counted):
    provider = _provider(counted, 4)
    counted.request('GET', '/resource_providers/%s' % provider,
                    version='1.20')
    counted.request('GET', '/resource_providers/%s/nothing' % provider,
                    version='1.20')
    counted.request('GET', '/traits', token=None, version='1.20')

    scraped = metrics_scrape.scrape(counted)
    for route, status, microversion in (
            ('/resource_providers/{uuid}', '200', '1.20'),
            ('unmatched', '404', '1.20'),
            ('/traits', '401', 'none')):
        assert metrics_scrape.value(
            scraped, 'placement_requests_total', route=route, method='GET',
            status=status, microversion=microversion) == 1
    assert not [key for key in scraped if provider in str(key)]


def test_each_label_set_counts_in_its_own_series(counted):
    """One route, method and microversion answered 200, then 404, then
    200 again, at two microversions: each status and version in its own
    series, however often the same labels come back."""
    provider = _provider(counted, 4)
    missing = str(uuid.uuid4())
    for asked, version in ((provider, '1.20'), (missing, '1.20'),
                           (provider, '1.20'), (provider, '1.14'),
                           (missing, '1.20'), (provider, '1.20')):
        counted.request('GET', '/resource_providers/%s' % asked,
                        version=version)

    scraped = metrics_scrape.scrape(counted)
    for status, microversion, times in (('200', '1.20', 3),
                                        ('404', '1.20', 2),
                                        ('200', '1.14', 1)):
        assert metrics_scrape.value(
            scraped, 'placement_requests_total',
            route='/resource_providers/{uuid}', method='GET', status=status,
            microversion=microversion) == times
        assert metrics_scrape.value(
            scraped, 'placement_request_duration_seconds_count',
            route='/resource_providers/{uuid}', method='GET',
            microversion=microversion) == {'1.20': 5, '1.14': 1}[microversion]

def test_candidates_windows_caches_and_the_emptied_step(counted):
    for _i in range(70):
        _provider(counted, 4)
    before = metrics_scrape.scrape(counted)

    def counts(scraped, name, **labels):
        return (metrics_scrape.value(scraped, name, **labels)
                - metrics_scrape.value(before, name, **labels))

    for query in ('resources=VCPU:1', 'resources=VCPU:1',
                  'resources=VCPU:1&limit=1',
                  'resources=VCPU:8&explain=true'):
        assert counted.request('GET', '/allocation_candidates?' + query,
                               version='1.41')[0] == 200

    scraped = metrics_scrape.scrape(counted)
    assert counts(scraped, 'placement_candidates_returned_count') == 4
    assert counts(scraped, 'placement_candidates_returned_sum') == 70 + 70 + 1
    assert counts(scraped, 'placement_candidates_empty_total') == 1
    assert counts(scraped, 'placement_candidates_emptied_total',
                  step='largest') == 1
    # limit=1 searches the first window of 64 trees, which serves.
    assert counts(scraped, 'placement_candidates_windows_total') == 1
    # The first whole-cloud read patches in the 70 new providers, reading
    # their stock; the second finds nothing changed (the last request,
    # which no provider can serve, stops before reading capacities).
    assert counts(scraped, 'placement_cache_cloud_reads_total',
                  how='patched') == 1
    assert counts(scraped, 'placement_cache_cloud_reads_total',
                  how='as_is') == 1
    assert counts(scraped, 'placement_cache_stock_lookups_total',
                  result='miss') == 70


def _sample_names(text):
    """Every name of a sample the exposition ``text`` could give."""
    return {family + suffix for family in metrics_scrape.family_names(text)
            for suffix in ('', '_total', '_bucket', '_count', '_sum')}


def _named_metrics(text):
    return set(re.findall(r'\bplacement_[a-z0-9_]+', text))


def test_the_sample_files_of_etc_name_only_metrics_that_exist(counted):
    existing = _sample_names(metrics_scrape.get(counted, '/metrics')[2])
    etc = os.path.join(servers.REPO, 'etc')
    with open(os.path.join(etc, 'grafana-dashboard.json')) as dashboard:
        expressions = [target['expr'] for panel in json.load(
            dashboard)['panels'] for target in panel['targets']]
    with open(os.path.join(etc, 'placement-rules.yml')) as rules:
        expressions += [rule['expr'] for group in yaml.safe_load(
            rules)['groups'] for rule in group['rules']]
    named = set()
    for expression in expressions:
        named |= _named_metrics(expression)

    assert len(expressions) == 27
    assert named and named <= existing, named - existing
    with open(os.path.join(etc, 'prometheus.yml')) as config:
        scrape = yaml.safe_load(config)
    assert scrape['rule_files'] == ['placement-rules.yml']
    assert [target['labels']['__metrics_path__']
            for target in scrape['scrape_configs'][0]['static_configs']] == [
        '/metrics/api-1', '/metrics/api-2']


@pytest.mark.needs('promtool')
def test_promtool_accepts_the_prometheus_files_of_etc():
    """``promtool check config`` checks the rule files it loads too."""
    done = subprocess.run(
        [provision.require('promtool')['promtool'], 'check', 'config',
         os.path.join(servers.REPO, 'etc', 'prometheus.yml')],
        capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done
    assert '  SUCCESS: 5 rules found' in done.stdout.splitlines()


def test_claims_and_their_retries(counted, monkeypatch):
    provider = _provider(counted, 4)
    bump_generations = providers_db.bump_generations
    bumps = []

    def changed_under_the_first_write(conn, expected):
        bumps.append(expected)
        return len(bumps) > 1 and bump_generations(conn, expected)

    monkeypatch.setattr(providers_db, 'bump_generations',
                        changed_under_the_first_write)

    def claim(amount):
        return counted.request('PUT', '/allocations/%s' % uuid.uuid4(), {
            'allocations': {provider: {'resources': {'VCPU': amount}}},
            'project_id': 'p', 'user_id': 'u', 'consumer_generation': None},
            version='1.28')[0]

    assert claim(2) == 204
    assert claim(3) == 409
    scraped = metrics_scrape.scrape(counted)
    assert len(bumps) == 2
    assert metrics_scrape.value(scraped, 'placement_claim_retries_total') == 1
    assert metrics_scrape.value(scraped, 'placement_claims_total',
                                outcome='claimed') == 1
    assert metrics_scrape.value(scraped, 'placement_claims_total',
                                outcome='capacity') == 1


def _count_every_family(env):
    """Requests giving every family a sample: a family without one is not
    in the exposition as promtool reads it, so it would go unchecked."""
    provider = _provider(env, 4)
    assert env.request('GET', '/allocation_candidates?resources=VCPU:8'
                       '&explain=true', version='1.41')[0] == 200
    assert env.request('PUT', '/allocations/%s' % uuid.uuid4(), {
        'allocations': {provider: {'resources': {'VCPU': 1}}},
        'project_id': 'p', 'user_id': 'u', 'consumer_generation': None},
        version='1.28')[0] == 204


@pytest.mark.only_backends('sqlite')
@pytest.mark.parametrize('linter', promlint.LINTERS)
def test_every_name_follows_prometheus_rules(counted, linter):
    _count_every_family(counted)
    text = metrics_scrape.get(counted, '/metrics')[2]
    assert linter(text) == []
    assert metrics_scrape.families_counted(text) == metrics_scrape.FAMILIES


@pytest.mark.only_backends('sqlite')
@pytest.mark.parametrize('linter', promlint.LINTERS)
def test_the_lint_refuses_the_old_name_of_the_inventories_total(
        counted, monkeypatch, linter):
    [(_name, help_text, position), *others] = collect.CAPACITY_GAUGES
    monkeypatch.setattr(collect, 'CAPACITY_GAUGES', (
        ('placement_inventory_total', help_text, position), *others))
    _count_every_family(counted)
    assert linter(metrics_scrape.get(counted, '/metrics')[2]) == [
        ('placement_inventory_total',
         'non-counter metrics should not have "_total" suffix')]
