"""HTTP helpers shared by the handler modules: bodies, query strings, headers."""

import datetime
import email.utils
import json
import urllib.parse

import jsonschema
from oslo_utils import uuidutils

from placement_lite import errors
from placement_lite import microversion

JSON = 'application/json'


def render(resp, body, status=200):
    resp.status = status
    resp.content_type = JSON
    resp.text = json.dumps(body)


def render_json_bytes(resp, data):
    """render() for a body already made into JSON bytes (200)."""
    resp.status = 200
    resp.content_type = JSON
    resp.data = data


def no_content(resp):
    resp.status = 204
    resp.content_type = None


def require_json_content(req):
    """415, as the reference answers, unless the body is declared JSON."""
    if req.content_type is None or req.content_type.split(';')[0].strip() != JSON:
        raise errors.UnsupportedMediaType(
            'The media type %s is not supported, use application/json'
            % req.content_type)


def require_json_accept(req):
    """406, as the reference answers, when the client refuses JSON."""
    if req.get_header('accept') and not req.client_accepts(JSON):
        raise errors.NotAcceptable('Only application/json is provided')


def location(req, path):
    """An absolute URL for ``path`` on this service (for ``Location``)."""
    return req.prefix + path


def json_body(req, schema=None, code=errors.DEFAULT):
    """The request's JSON body, validated against ``schema`` when given.

    415 when it is not JSON, 400 when it does not parse or validate, as the
    reference answers; ``code`` is the error code of a validation failure.
    """
    require_json_content(req)
    raw = req.bounded_stream.read()
    try:
        data = json.loads(raw)
    except ValueError as exc:
        raise errors.BadRequest('Malformed JSON: %s' % exc)
    if schema is not None:
        validate(data, schema, code)
    return data


#: Bodies accept any uuid spelling oslo accepts (no dashes, braces, urn:).
_BODY_FORMATS = jsonschema.FormatChecker()
_BODY_FORMATS.checks('uuid')(uuidutils.is_uuid_like)


def schema_error(data, schema, format_checker):
    """The error ``jsonschema.validate`` would raise for ``data``, or None.

    The same validator and the same choice among several errors (its "best
    match", so messages are the reference's), without checking the schema
    itself against its metaschema first, which jsonschema.validate does on
    every call and which costs tens of milliseconds per request. Our
    schemas are fixed; tests/unit/test_schemas.py checks them once.
    """
    validator = jsonschema.validators.validator_for(schema)(
        schema, format_checker=format_checker)
    return jsonschema.exceptions.best_match(validator.iter_errors(data))


def validate(data, schema, code=errors.DEFAULT):
    error = schema_error(data, schema, _BODY_FORMATS)
    if error is not None:
        raise errors.BadRequest('JSON does not validate: %s' % error,
                                code=code)


def schema_for(req, version_schemas):
    """The first schema whose microversion the request is at (newest first)."""
    for version, schema in version_schemas:
        if microversion.at_least(req, version):
            return schema
    raise ValueError('no schema for this microversion')


def query_pairs(req):
    """The query string as an ordered list of (key, value) pairs."""
    return urllib.parse.parse_qsl(req.query_string, keep_blank_values=True)


def http_date(moment):
    """An HTTP date for a naive UTC datetime."""
    return email.utils.format_datetime(
        moment.replace(tzinfo=datetime.timezone.utc), usegmt=True)


def set_last_modified(req, resp, moment):
    """From 1.15: ``last-modified`` (``moment`` or now) and ``cache-control``."""
    if not microversion.at_least(req, '1.15'):
        return
    moment = moment or datetime.datetime.now(datetime.timezone.utc).replace(
        tzinfo=None)
    resp.set_header('last-modified', http_date(moment))
    resp.set_header('cache-control', 'no-cache')


def newest(*moments):
    """The latest of some created_at/updated_at values (None ignored)."""
    present = [m for m in moments if m is not None]
    return max(present) if present else None
