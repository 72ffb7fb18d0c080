"""Query-string parsing shared by the listing routes and allocation candidates.

The filters of ``GET /resource_providers`` and the request groups of
``GET /allocation_candidates`` use the same little languages, parsed with the
reference's rules and 400 messages (the values by
:mod:`placement_lite.querystring`, which the allocation-candidates engine
shares):

- ``member_of[$S]``: ``UUID``, ``in:UUID,UUID``, and from 1.32 ``!UUID`` and
  ``!in:UUID,UUID``; repeatable from 1.24 (each occurrence is ANDed);
- ``required[$S]``: ``T1,T2`` (from 1.22 ``!T`` forbids ``T``), and from 1.39
  ``in:T1,T2`` (any of) and repeatable; before 1.39 only the last occurrence
  counts;
- ``in_tree[$S]``: one provider uuid;
- ``resources[$S]``: ``RC:AMOUNT,RC:AMOUNT``.

Every function raises :class:`placement_lite.errors.BadRequest` on bad
input; none touches the database (unknown aggregates, traits and resource
classes are the caller's business).
"""

import urllib.parse

import jsonschema

from placement_lite import errors
from placement_lite import microversion
from placement_lite import querystring
from placement_lite.handlers import validation

_INVALID = 'Invalid query string parameters: '


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


def values(req, key):
    """Every value given for ``key``, in query-string order."""
    return [value for name, value in query_pairs(req) if name == key]


def last_values(req):
    """{key: value} with the last value of each key, as validation sees it."""
    latest = {}
    for key, value in query_pairs(req):
        latest[key] = value
    return latest


_QUERY_FORMATS = jsonschema.FormatChecker()


def validate(req, schema):
    """400 unless the query string (last value of each key) fits ``schema``."""
    error = validation.schema_error(last_values(req), schema, _QUERY_FORMATS)
    if error is not None:
        raise errors.BadRequest(_INVALID + str(error))


def member_of(req, suffix=''):
    """The ``member_of<suffix>`` filters of a request.

    Returns ``(required, forbidden)``: ``required`` is a list of sets of
    aggregate uuids (the provider must be in at least one aggregate of
    every set), ``forbidden`` a set of aggregate uuids the provider must be
    in none of.
    """
    key = 'member_of' + suffix
    given = values(req, key)
    version = microversion.of(req)
    if len(given) > 1 and version < microversion.MULTIPLE_MEMBER_OF:
        raise errors.BadRequest(
            'Multiple %s parameters are not supported' % key)
    allow_forbidden = version >= microversion.FORBIDDEN_AGGREGATES
    required = []
    forbidden = set()
    for value in given:
        any_of, none_of = querystring.member_of_value(value)
        if any_of:
            required.append(any_of)
        if none_of:
            if not allow_forbidden:
                raise errors.BadRequest(
                    'Forbidden %s parameters are not supported in the '
                    'specified microversion' % key)
            forbidden |= none_of
    return required, forbidden


def required_traits(req, suffix=''):
    """The ``required<suffix>`` filters of a request.

    Returns ``(required, forbidden)``: ``required`` is a list of sets of
    trait names (the provider must have at least one trait of every set),
    ``forbidden`` a set of trait names it must have none of.
    """
    version = microversion.of(req)
    allow_forbidden = version >= microversion.FORBIDDEN_TRAITS
    allow_any_of = version >= microversion.ANY_TRAITS
    given = values(req, 'required' + suffix)
    if not allow_any_of:
        given = given[-1:]
    required = []
    forbidden = set()
    for value in given:
        any_ofs, none_of = querystring.parse_traits(
            value, allow_forbidden, allow_any_of)
        required.extend(any_ofs)
        forbidden |= none_of
    return required, forbidden

