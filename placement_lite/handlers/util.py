"""HTTP helpers shared by the handler modules: bodies, query strings, headers."""

import datetime
import email.utils
import json
import urllib.parse

import jsonschema
import webob.acceptparse
from oslo_utils import uuidutils

from placement_lite import errors
from placement_lite import microversion
from placement_lite.schemas import common as schemas_common

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


def require_version(req, feature):
    """404, as the reference answers, when the route does not exist at the
    request's microversion: before ``feature``."""
    if microversion.of(req) < feature:
        raise errors.NotFound('')


def require_json_content(req):
    """415, as the reference answers, unless the body is declared JSON."""
    if req.content_type is None or req.content_type.split(';')[0].strip() != JSON:
        raise errors.UnsupportedMediaType(
            'The media type %s is not supported, use application/json'
            % req.content_type)


def require_json_accept(req):
    """406, as the reference answers, when the client refuses JSON. An
    Accept header that does not parse counts as none, as in the reference."""
    accept = webob.acceptparse.create_accept_header(
        req.get_header('accept') or None)
    if accept and not accept.acceptable_offers([JSON]):
        raise errors.NotAcceptable('Only application/json is provided')


def location(req, path):
    """An absolute URL for ``path`` on this service (for ``Location``)."""
    return req.prefix + path


def json_body(req, schema=None, code=errors.DEFAULT):
    """The request's JSON body, validated against ``schema`` when given.

    415 when it is not JSON, 400 when it does not parse or validate, as the
    reference answers; ``code`` is the error code of a validation failure.
    The body must be UTF-8 (a byte order mark is refused, as the reference
    refuses it), hold no string the database cannot store and nest at most
    :data:`MAX_JSON_DEPTH` levels deep.
    """
    require_json_content(req)
    raw = read_body(req)
    try:
        data = json.loads(raw.decode('utf-8'))
    except ValueError as exc:
        raise errors.BadRequest('Malformed JSON: %s' % exc)
    except RecursionError:
        raise _too_deep()
    _check_json_values(data)
    if schema is not None:
        validate(data, schema, code)
    return data


def refuse_amounts_beyond_column(data):
    """400 for an allocation amount (any ``resources`` mapping of a valid
    allocations body) larger than its 32-bit column holds: the reference's
    schema has no maximum and its database fails with a 500."""
    pending = [data]
    while pending:
        value = pending.pop()
        if isinstance(value, dict):
            amounts = value.get('resources')
            if isinstance(amounts, dict):
                for amount in amounts.values():
                    if isinstance(amount, int) and amount > schemas_common.MAX_INT:
                        raise errors.BadRequest(
                            'JSON does not validate: %d is greater than the '
                            'maximum of %d' % (amount, schemas_common.MAX_INT))
            pending.extend(value.values())
        elif isinstance(value, list):
            pending.extend(value)


def read_body(req):
    """The request body: 413 beyond ``[api] max_request_body_size``, read
    or announced (the app middleware refuses an announced length first)."""
    limit = req.env[errors.MAX_BODY_ENVIRON]
    raw = req.bounded_stream.read(limit + 1)
    if len(raw) > limit:
        raise errors.RequestTooLarge(limit)
    return raw


#: Placement's deepest body (POST /allocations) nests 5 levels; a deeper
#: one would only make the validator recurse until it fails.
MAX_JSON_DEPTH = 32


def _too_deep():
    return errors.BadRequest('Malformed JSON: nested more than %d levels '
                             'deep' % MAX_JSON_DEPTH)


def _check_json_values(data):
    """400 for nesting beyond MAX_JSON_DEPTH, and for strings (keys too)
    the database cannot store: a NUL character, or a lone surrogate (valid
    JSON as an escape, not encodable as UTF-8)."""
    pending = [(data, 1)]
    while pending:
        value, depth = pending.pop()
        if isinstance(value, dict):
            items = list(value.keys()) + list(value.values())
        elif isinstance(value, list):
            items = value
        else:
            _check_string(value)
            continue
        if depth > MAX_JSON_DEPTH:
            raise _too_deep()
        pending.extend((item, depth + 1) for item in items)


def _check_string(value):
    if not isinstance(value, str):
        return
    if '\x00' in value:
        raise errors.BadRequest(
            'Malformed JSON: strings may not contain the NUL character')
    try:
        value.encode('utf-8')
    except UnicodeEncodeError:
        raise errors.BadRequest(
            'Malformed JSON: strings may not contain unpaired surrogates '
            '(\\ud800-\\udfff)')


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


def query_pairs(req):
    """The query string as an ordered list of (key, value) pairs, parsed
    as the reference (webob) parses it: pairs separated by ``&`` or ``;``,
    ``+`` for a space, percent-escapes decoded as strict UTF-8 (400 when
    they are not)."""
    raw = req.query_string.encode('latin-1').replace(b'+', b' ')
    pairs = []
    try:
        for part in raw.replace(b';', b'&').split(b'&'):
            if part:
                key, _sep, value = part.partition(b'=')
                pairs.append((urllib.parse.unquote_to_bytes(key).decode(),
                              urllib.parse.unquote_to_bytes(value).decode()))
    except UnicodeDecodeError as exc:
        raise errors.BadRequest('Invalid query string parameters: %s' % exc)
    return pairs


def http_date(moment):
    """An HTTP date for a naive UTC datetime."""
    return email.utils.format_datetime(
        moment.replace(tzinfo=datetime.timezone.utc), usegmt=True)


def set_last_modified(req, resp, moment):
    """From 1.15: ``last-modified`` (``moment`` or now) and ``cache-control``."""
    if microversion.of(req) < microversion.LAST_MODIFIED:
        return
    moment = moment or datetime.datetime.now(datetime.timezone.utc).replace(
        tzinfo=None)
    resp.set_header('last-modified', http_date(moment))
    resp.set_header('cache-control', 'no-cache')


def newest(*moments):
    """The latest of some created_at/updated_at values (None ignored)."""
    present = [m for m in moments if m is not None]
    return max(present) if present else None
