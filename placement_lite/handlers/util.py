"""HTTP helpers shared by the handler modules: bodies, query strings, headers."""

import contextlib
import datetime
import email.utils
import itertools
import json
import operator
import re
import urllib.parse

import jsonschema
import webob.acceptparse
from oslo_utils import uuidutils

from placement_lite import errors
from placement_lite import microversion
from placement_lite import schema_errors
from placement_lite.domain import providers
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
        text = raw.decode('utf-8')
        data = json.loads(text, parse_constant=_number_constant)
    except ValueError as exc:
        raise errors.BadRequest('Malformed JSON: %s' % exc)
    except RecursionError:
        raise _too_deep()
    _check_json_values(text, data)
    if schema is not None:
        validate(data, schema, code)
    return data


@contextlib.contextmanager
def provider_found_first(req, uuid):
    """Around reading the body of a write to the provider ``uuid``: when
    the body is refused, 404 first if the provider does not exist, as the
    reference looks before it reads. An accepted body spares that look:
    the write looks itself, in its transaction, and answers the same
    404."""
    try:
        yield
    except errors.PlacementError:
        providers.get_provider(req.placement.db, uuid)
        raise


def _number_constant(name):
    """``Infinity`` as Python's parser reads it: the schemas' maxima refuse
    it with the reference's words. ``NaN`` and ``-Infinity``, which no
    schema bound refuses and which JSON does not have, are malformed
    (the reference fails with a 500 when it works a capacity out of
    them)."""
    if name == 'Infinity':
        return float(name)
    raise ValueError('%s is not a JSON number' % name)


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
            children = value.values()
        elif isinstance(value, list):
            children = value
        else:
            continue
        # Only containers hold amounts: a map of 120,000 amounts is not
        # walked amount by amount.
        pending.extend([child for child in children
                        if isinstance(child, (dict, list))])


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

_NUL = 'Malformed JSON: strings may not contain the NUL character'
_SURROGATE = ('Malformed JSON: strings may not contain unpaired surrogates '
              '(\\ud800-\\udfff)')
_TOO_DEEP = 'Malformed JSON: nested more than %d levels deep' % MAX_JSON_DEPTH

#: The escapes that make a NUL or a surrogate: a backslash run of odd
#: length (an even one escapes itself) before ``u0000`` or ``uD800`` to
#: ``uDFFF``. Anchored at the start of a run, so each run is read once.
_ESCAPE = re.compile(r'(?<!\\)(\\+)u(0000|[dD][89a-fA-F][0-9a-fA-F]{2})')
#: A low surrogate's escape, the second half of a pair.
_LOW_SURROGATE = re.compile(r'\\u[dD][c-fC-F][0-9a-fA-F]{2}')
#: A JSON string (of a document that parsed).
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.S)
#: Bracket bytes as 2 (opening) or 0 (closing); other bytes are deleted.
_BRACKETS = bytes.maketrans(b'[{]}', b'\x02\x02\x00\x00')
_NOT_BRACKETS = bytes(set(range(256)) - set(b'[]{}'))


def _too_deep():
    return errors.BadRequest(_TOO_DEEP)


def _may_have_problems(text):
    """Whether the JSON document ``text`` (which parsed) may have a NUL
    character, an unpaired surrogate or nesting beyond MAX_JSON_DEPTH,
    from its text alone: a NUL or a surrogate in a string can only come
    from an escape (UTF-8 has no surrogates, JSON strings no raw control
    characters). Nothing the parsed document holds is missed; what a
    repeated key dropped may be seen."""
    if '\\' in text:
        paired = set()
        for match in _ESCAPE.finditer(text):
            if len(match.group(1)) % 2 == 0 or match.start() in paired:
                continue
            code = int(match.group(2), 16)
            if code == 0 or code >= 0xdc00 or not _LOW_SURROGATE.match(
                    text, match.end()):
                return True
            paired.add(match.end())
        outside_strings = _STRING.sub('', text)
    else:
        # No escapes: every other quote closes a string.
        outside_strings = ''.join(text.split('"')[::2])
    brackets = outside_strings.encode('ascii').translate(
        _BRACKETS, _NOT_BRACKETS)
    return bool(brackets) and max(map(
        operator.sub, itertools.accumulate(brackets),
        itertools.count(1))) > MAX_JSON_DEPTH


def _check_json_values(text, data):
    """400 for nesting beyond MAX_JSON_DEPTH, and for strings (keys too)
    the database cannot store: a NUL character, or a lone surrogate (valid
    JSON as an escape, not encodable as UTF-8). ``data`` is ``text``
    parsed. The text shows at once that a body has none of these; one
    that may have some is walked, depth first, last item first, and the
    first problem met is reported."""
    if _may_have_problems(text):
        problem = _first_problem(data)
        if problem is not None:
            raise errors.BadRequest(problem)


def _first_problem(data):
    """The first problem a walk of ``data`` meets, or None: each container
    is met before what it holds, which is walked last item first (a dict's
    values, then its keys)."""
    if not isinstance(data, (dict, list)):
        return _string_problem(data)
    walking = [(reversed([*data.keys(), *data.values()]) if isinstance(
        data, dict) else reversed(data), 2)]
    while walking:
        items, depth = walking[-1]
        for value in items:
            if isinstance(value, str):
                problem = _string_problem(value)
                if problem is not None:
                    return problem
            elif isinstance(value, (dict, list)):
                if depth > MAX_JSON_DEPTH:
                    return _TOO_DEEP
                if value:
                    walking.append((reversed(
                        [*value.keys(), *value.values()] if isinstance(
                            value, dict) else value), depth + 1))
                    break
        else:
            walking.pop()
    return None


def _string_problem(value):
    if not isinstance(value, str):
        return None
    if '\x00' in value:
        return _NUL
    try:
        value.encode('utf-8')
    except UnicodeEncodeError:
        return _SURROGATE
    return None


#: A uuid as str(uuid.UUID) writes it, in either case.
_PLAIN_UUID = re.compile(r'[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-'
                         r'[0-9a-fA-F]{4}-[0-9a-fA-F]{12}')


def _is_uuid_like(value):
    """oslo's is_uuid_like, answered at once for what it surely takes
    (the usual spelling) or refuses (not a string, or shorter than the
    32 digits it needs): a body of 27,000 aggregates is checked item by
    item."""
    if not isinstance(value, str) or len(value) < 32:
        return False
    return bool(_PLAIN_UUID.fullmatch(value)) or uuidutils.is_uuid_like(value)


#: Bodies accept any uuid spelling oslo accepts (no dashes, braces, urn:).
_BODY_FORMATS = jsonschema.FormatChecker()
_BODY_FORMATS.checks('uuid')(_is_uuid_like)


#: {(id(schema), id(format checker)): (schema, its Checker)}: schemas are
#: module constants, each compiled once.
_CHECKERS = {}


def schema_error(data, schema, format_checker=_BODY_FORMATS):
    """The error ``jsonschema.validate`` would raise for ``data`` (a
    request body, or a query string's last value of each key), or None,
    found in time linear in ``data`` (see schema_errors): at most a few
    microseconds for a valid query string, where building jsonschema's
    validator costs a quarter of a millisecond."""
    key = id(schema), id(format_checker)
    if key not in _CHECKERS:
        _CHECKERS[key] = (schema, schema_errors.Checker(schema,
                                                        format_checker))
    return _CHECKERS[key][1].best_error(data)


def validate(data, schema, code=errors.DEFAULT):
    """400 with jsonschema's best match when ``data`` breaks ``schema``
    (a module constant), found in time linear in ``data``."""
    error = schema_error(data, schema)
    if error is not None:
        raise errors.BadRequest(
            'JSON does not validate: %s' % schema_errors.describe(error),
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
