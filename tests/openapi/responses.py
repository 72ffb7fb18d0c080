"""Check responses against api-ref/openapi.yaml, quickly.

The gabbi driver (tests/gabbi_runner.py) checks every response it gets
with :func:`checker`: a thousand and more responses per backend, so this
does no more than the document asks and compiles each schema once. A
response is checked when its route and method are in the document: the
status must be one the operation lists, the media type one the status
lists (none for an empty body), and a JSON body must fit the schema.
Outside the document only an error status is fine (an unknown route or
method); OPTIONS (CORS) and HEAD are left alone.
"""

import functools
import json
import re

import jsonschema
import referencing
import referencing.jsonschema
import yaml

from tests.openapi import document as openapi_document

_BASE = 'urn:placement-lite-openapi'
_UNCHECKED_METHODS = ('OPTIONS', 'HEAD')


class Checker:
    def __init__(self, document):
        self.document = document
        resource = referencing.Resource.from_contents(
            document, default_specification=referencing.jsonschema.DRAFT202012)
        self._registry = referencing.Registry().with_resource(_BASE, resource)
        self._routes = []
        for template in document['paths']:
            pattern = '/'.join(
                '[^/]+' if part.startswith('{') else re.escape(part)
                for part in template.split('/'))
            self._routes.append((re.compile(pattern + '$'), template))
        self._validators = {}

    def route(self, path):
        """The document's path template matching ``path``, or None."""
        for pattern, template in self._routes:
            if pattern.match(path):
                return template
        return None

    def _validator(self, pointer):
        """A validator for the schema at ``pointer`` in the document."""
        if pointer not in self._validators:
            self._validators[pointer] = jsonschema.Draft202012Validator(
                {'$ref': _BASE + '#' + pointer}, registry=self._registry,
                format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)
        return self._validators[pointer]

    def _response(self, response):
        while '$ref' in response:
            kind, name = response['$ref'].split('/')[-2:]
            response = self.document['components'][kind][name]
        return response

    def check(self, method, path, status, content_type, body):
        """(template or None, list of problems) for one response."""
        if method in _UNCHECKED_METHODS:
            return None, []
        template = self.route(path)
        operation = (self.document['paths'].get(template, {})
                     .get(method.lower()) if template else None)
        if operation is None:
            if status < 400:
                return None, ['%s %s answered %d but is not in the document'
                              % (method, path, status)]
            return None, []
        where = '%s %s (%s) %d' % (method, path, template, status)
        response = operation['responses'].get(str(status))
        if response is None:
            return template, ['%s: status not in the document' % where]
        response = self._response(response)
        content = response.get('content', {})
        if not body:
            if content and status != 204:
                return template, ['%s: empty body, the document has %s'
                                  % (where, ', '.join(content))]
            return template, []
        media_type = content_type or ''
        if media_type not in content:
            media_type = media_type.split(';')[0].strip()
        if media_type not in content:
            return template, ['%s: media type %r not in the document'
                              % (where, content_type)]
        if media_type != 'application/json':
            return template, []
        try:
            data = json.loads(body)
        except ValueError as exc:
            return template, ['%s: body is not JSON: %s' % (where, exc)]
        declared = operation['responses'][str(status)]
        if '$ref' in declared:
            pointer = declared['$ref'][1:]
        else:
            pointer = '/paths/%s/%s/responses/%s' % (
                _escape(template), method.lower(), status)
        pointer += '/content/application~1json/schema'
        error = jsonschema.exceptions.best_match(
            self._validator(pointer).iter_errors(data))
        if error is not None:
            return template, ['%s: %s at %s' % (
                where, error.message, '/'.join(map(str, error.path)))]
        return template, []


def _escape(token):
    return token.replace('~', '~0').replace('/', '~1')


@functools.lru_cache(maxsize=None)
def checker():
    """The Checker of the committed document (one per process)."""
    with open(openapi_document.PATH) as handle:
        return Checker(yaml.safe_load(handle))
