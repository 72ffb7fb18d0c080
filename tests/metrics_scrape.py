"""Reading a /metrics answer in tests: every sample by name and labels."""

import io

from prometheus_client import parser

from tests import promlint

#: The metric families /metrics exposes, as promtool reads them (a
#: counter's name with ``_total``), sorted.
FAMILIES = sorted([
    'placement_requests_total', 'placement_request_duration_seconds',
    'placement_db_statements_per_request', 'placement_candidates_returned',
    'placement_candidates_trees_searched', 'placement_candidates_empty_total',
    'placement_candidates_emptied_total',
    'placement_candidates_windows_total', 'placement_claims_total',
    'placement_claim_retries_total', 'placement_db_lock_waits_total',
    'placement_db_replica_reads_total', 'placement_cache_cloud_reads_total',
    'placement_cache_stock_lookups_total',
    'placement_db_connections_checked_out',
    'placement_inventory_total_amount', 'placement_inventory_reserved',
    'placement_inventory_capacity', 'placement_inventory_used',
    'placement_capacity_read_seconds'])


def get(env, path, remote_addr='127.0.0.1', method='GET'):
    """(status, headers, body text) of a request without a token to the
    application of ``env`` (a harness.Environment), from ``remote_addr``."""
    environ = {'REQUEST_METHOD': method, 'PATH_INFO': path,
               'QUERY_STRING': '', 'REMOTE_ADDR': remote_addr,
               'SERVER_NAME': 'localhost', 'SERVER_PORT': '80',
               'SERVER_PROTOCOL': 'HTTP/1.1', 'wsgi.url_scheme': 'http',
               'wsgi.input': io.BytesIO(b''), 'wsgi.errors': io.StringIO()}
    answer = {}

    def start_response(status, headers, exc_info=None):
        answer['status'] = int(status.split()[0])
        answer['headers'] = dict(headers)

    body = b''.join(env.app(environ, start_response)).decode()
    return answer['status'], answer['headers'], body


def scrape(env):
    """samples() of the /metrics answer of ``env``'s application."""
    status, headers, text = get(env, '/metrics')
    assert status == 200
    assert headers['Content-Type'].startswith('text/plain; version=')
    return samples(text)


def samples(text):
    """{(sample name, frozenset of (label, value)): value} of an exposition."""
    return {(sample.name, frozenset(sample.labels.items())): sample.value
            for family in parser.text_string_to_metric_families(text)
            for sample in family.samples}


def value(scraped, name, **labels):
    """The value of one sample of ``scraped`` (see samples); 0 when the
    series was never counted."""
    return scraped.get((name, frozenset(labels.items())), 0)


def family_names(text):
    """The names of the metric families of an exposition."""
    return {family.name
            for family in parser.text_string_to_metric_families(text)}


def families_counted(text):
    """The sorted names of the families of an exposition that have a
    sample, as promtool reads them (it leaves out those without one)."""
    return sorted(family.name for family in promlint.families(text)
                  if family.series)
