"""Reading a /metrics answer in tests: every sample by name and labels."""

import io

from prometheus_client import parser


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
