"""Write api-ref/reference/*.md, one page per resource, from
api-ref/openapi.yaml and from requests the gabbi suites make.

    python -m tests.openapi.pages     # runs every gabbi file on SQLite

Each operation's example is a request and response of a passing gabbi test
(a success at the highest microversion, the smallest readable one). The
page names its test in a comment; tests/test_api_ref_pages.py runs those
files again and fails when a page differs from what they answer now. So
the example values stay the same from run to run, uuids are renumbered in
the order a gabbi file first uses them, times are fixed and the host is
``placement.example``.
"""

import glob
import json
import os
import re

import yaml

from tests import fixtures
from tests import gabbi_runner
from tests.openapi import document as openapi_document

PAGES = os.path.join(openapi_document.REPO, 'api-ref', 'reference')
GABBITS = os.path.join(openapi_document.REPO, 'gabbits')
_CITATION = re.compile(r'<!-- example of (\S+ \S+): (\S+) :: (.*) -->')
_UUID = re.compile(r'[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-'
                   r'[0-9a-fA-F]{4}-[0-9a-fA-F]{12}')
_TIME = re.compile(r'\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?')
_MAX_LINES = 40
_HEADER_NAMES = {'openstack-api-version': 'OpenStack-API-Version',
                 'content-type': 'Content-Type', 'location': 'Location'}
_SHOWN_REQUEST_HEADERS = ['openstack-api-version', 'content-type']
_SHOWN_RESPONSE_HEADERS = ['content-type', 'location',
                           'openstack-api-version']


def load_document():
    with open(openapi_document.PATH) as handle:
        return yaml.safe_load(handle)


def record(paths):
    """{file name: [passing Outcome]} of running each gabbi file."""
    recorded = {}
    for path in paths:
        outcomes = gabbi_runner.run_file(path, 'sqlite', fixtures)
        recorded[os.path.basename(path)] = [
            outcome for outcome in outcomes if outcome.status == 'passed']
    return recorded


class _Normalizer:
    """Stable text for one gabbi file's exchanges (see the module doc)."""

    def __init__(self, outcomes):
        self.uuids = {}
        self.hosts = set()
        for outcome in outcomes:
            for exchange in outcome.exchanges:
                self.hosts.add(exchange.host)
                for text in (exchange.path, exchange.query,
                             exchange.request_body.decode(errors='replace'),
                             exchange.response_body.decode(errors='replace')):
                    for found in _UUID.findall(text):
                        self.uuids.setdefault(
                            found.lower(), '%08x-0000-4000-8000-%012x' % (
                                len(self.uuids) + 1, len(self.uuids) + 1))

    def __call__(self, text):
        for host in self.hosts:
            if host:
                text = text.replace(host, 'placement.example')
        text = _UUID.sub(lambda m: self.uuids.get(m.group().lower(),
                                                  m.group()), text)
        return _TIME.sub('2024-01-01T00:00:00.000000', text)


def _version(exchange):
    value = exchange.response_headers.get('openstack-api-version', '')
    minor = value.rpartition('.')[2]
    return int(minor) if minor.isdigit() else 0


def _key(exchange):
    size = len(exchange.request_body) + len(exchange.response_body)
    # The newest shape first; then a small example, but one with content.
    return (-_version(exchange), size < 60, size)


def choose(recorded, cited=None):
    """{operation id: (file, test name, exchange, normalizer)}.

    ``cited``: {operation id: (file, test name)} to take instead of
    choosing (what the committed pages name)."""
    chosen = {}
    for file_name in sorted(recorded):
        outcomes = recorded[file_name]
        normalize = _Normalizer(outcomes)
        for outcome in outcomes:
            for exchange in outcome.exchanges:
                if exchange.route is None or not 200 <= exchange.status < 300:
                    continue
                operation = '%s %s' % (exchange.method, exchange.route)
                if cited is not None:
                    if cited.get(operation) == (file_name, outcome.name):
                        chosen[operation] = (file_name, outcome.name,
                                             exchange, normalize)
                    continue
                best = chosen.get(operation)
                if best is None or _key(exchange) < _key(best[2]):
                    chosen[operation] = (file_name, outcome.name, exchange,
                                         normalize)
    return chosen


def cited_examples():
    """{operation id: (file, test name)} as the committed pages cite them."""
    cited = {}
    for page in glob.glob(os.path.join(PAGES, '*.md')):
        with open(page) as handle:
            for operation, file_name, test in _CITATION.findall(
                    handle.read()):
                cited[operation] = (file_name, test)
    return cited


def _body(raw, normalize):
    if not raw:
        return ''
    try:
        text = json.dumps(json.loads(raw), indent=2)
    except ValueError:
        text = raw.decode(errors='replace')
    lines = normalize(text).splitlines()
    if len(lines) > _MAX_LINES:
        lines = lines[:_MAX_LINES] + ['... (%d more lines)'
                                      % (len(lines) - _MAX_LINES)]
    return '\n' + '\n'.join(lines) + '\n'


def _headers(headers, names):
    return ''.join('%s: %s\n' % (_HEADER_NAMES[name], headers[name])
                   for name in names if name in headers)


def _example(operation_id, chosen):
    file_name, test, exchange, normalize = chosen
    target = exchange.path + ('?' + exchange.query if exchange.query else '')
    request = '%s %s HTTP/1.1\n%s%s' % (
        exchange.method, target,
        _headers(exchange.request_headers, _SHOWN_REQUEST_HEADERS),
        _body(exchange.request_body, normalize))
    response = 'HTTP/1.1 %d\n%s%s' % (
        exchange.status,
        _headers(exchange.response_headers, _SHOWN_RESPONSE_HEADERS),
        _body(exchange.response_body, normalize))
    return ('<!-- example of %s: %s :: %s -->\n'
            'Example, from `gabbits/%s`, test "%s":\n\n'
            '```http\n%s```\n\n```http\n%s```\n' % (
                operation_id, file_name, test, file_name, test,
                normalize(request), normalize(response)))


def _schema_names(schema):
    if '$ref' in schema:
        return ['`%s`' % schema['$ref'].rpartition('/')[2]]
    names = []
    for member in schema.get('anyOf', []):
        names.extend(_schema_names(member))
    return names or ['see openapi.yaml']


def _operation(document, path, method, operation, chosen):
    operation_id = operation['operationId']
    lines = ['## %s %s' % (method.upper(), path), '',
             operation['summary'] + '.', '']
    if 'description' in operation:
        lines += [operation['description'], '']
    lines += ['Microversions:', '']
    lines += ['- %s: %s' % (item['version'], item['change'])
              for item in operation['x-openstack-microversions']]
    lines += ['', '| Parameter | In | Required | Description |',
              '| --- | --- | --- | --- |']
    for parameter in operation['parameters']:
        if '$ref' in parameter:
            parameter = document['components']['parameters'][
                parameter['$ref'].rpartition('/')[2]]
        lines.append('| `%s` | %s | %s | %s |' % (
            parameter['name'], parameter['in'],
            'yes' if parameter.get('required') else 'no',
            parameter.get('description', '').replace('|', '\\|')))
    lines.append('')
    body = operation.get('requestBody')
    if body:
        lines += ['Request body (JSON): %s (in `openapi.yaml`, under '
                  '`components/schemas`).' % ', '.join(_schema_names(
                      body['content']['application/json']['schema'])), '']
    lines += ['| Status | Meaning |', '| --- | --- |']
    for status, response in operation['responses'].items():
        if '$ref' in response:
            name = response['$ref'].rpartition('/')[2]
            text = 'Error (`%s`)' % name
        else:
            text = response['description']
        lines.append('| %s | %s |' % (status, text))
    lines.append('')
    if operation_id in chosen:
        lines.append(_example(operation_id, chosen[operation_id]))
    else:
        lines += ['No gabbi test makes a successful request of this route.',
                  '']
    return '\n'.join(lines)


def render(document, chosen):
    """{page file name: text}."""
    pages = {}
    for tag, page, title in openapi_document.TAGS:
        sections = [
            '# %s\n\n' % title,
            'Generated by `tests/openapi/pages.py` from '
            '[openapi.yaml](../openapi.yaml) and from requests the gabbi '
            'suites make (uuids renumbered, times fixed, host '
            '`placement.example`); do not edit by hand. Every route takes '
            'the `OpenStack-API-Version` header and answers errors as '
            'described in [api-ref/README.md](../README.md).\n\n']
        for path, methods in document['paths'].items():
            for method, operation in methods.items():
                if tag in operation['tags']:
                    sections.append(_operation(document, path, method,
                                               operation, chosen) + '\n')
        pages[page + '.md'] = ''.join(sections).rstrip('\n') + '\n'
    return pages


def main():
    document = load_document()
    recorded = record(sorted(glob.glob(os.path.join(GABBITS, '*.yaml'))))
    os.makedirs(PAGES, exist_ok=True)
    for name, text in render(document, choose(recorded)).items():
        with open(os.path.join(PAGES, name), 'w') as handle:
            handle.write(text)


if __name__ == '__main__':
    main()
