"""Query-string parsing shared by the listing routes and allocation candidates.

The filters of ``GET /resource_providers`` and the request groups of
``GET /allocation_candidates`` use the same little languages, parsed here
with the reference's rules and 400 messages:

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

import itertools

import jsonschema
from oslo_utils import uuidutils

from placement_lite import errors
from placement_lite import microversion
from placement_lite.handlers import util

_INVALID = 'Invalid query string parameters: '


def values(req, key):
    """Every value given for ``key``, in query-string order."""
    return [value for name, value in util.query_pairs(req) if name == key]


def last_values(req):
    """{key: value} with the last value of each key, as validation sees it."""
    latest = {}
    for key, value in util.query_pairs(req):
        latest[key] = value
    return latest


def validate(req, schema):
    """400 unless the query string (last value of each key) fits ``schema``."""
    try:
        jsonschema.validate(last_values(req), schema,
                            format_checker=jsonschema.FormatChecker())
    except jsonschema.ValidationError as exc:
        raise errors.BadRequest(_INVALID + str(exc))


def member_of(req, suffix=''):
    """The ``member_of<suffix>`` filters of a request.

    Returns ``(required, forbidden)``: ``required`` is a list of sets of
    aggregate uuids (the provider must be in at least one aggregate of
    every set), ``forbidden`` a set of aggregate uuids the provider must be
    in none of.
    """
    key = 'member_of' + suffix
    given = values(req, key)
    if len(given) > 1 and not microversion.at_least(req, '1.24'):
        raise errors.BadRequest(
            'Multiple %s parameters are not supported' % key)
    allow_forbidden = microversion.at_least(req, '1.32')
    required = []
    forbidden = set()
    for value in given:
        any_of, none_of = _member_of_value(value)
        if any_of:
            required.append(any_of)
        if none_of:
            if not allow_forbidden:
                raise errors.BadRequest(
                    'Forbidden %s parameters are not supported in the '
                    'specified microversion' % key)
            forbidden |= none_of
    return required, forbidden


def _member_of_value(value):
    """One member_of value: (uuids one of which is required, forbidden uuids)."""
    if ',' in value and not value.startswith(('in:', '!in:')):
        raise errors.BadRequest(
            "Multiple values for 'member_of' must be prefixed with the "
            "'in:' or '!in:' keyword using the valid microversion. "
            "Got: %s" % value)
    any_of, none_of = set(), set()
    if value.startswith('!in:'):
        none_of = set(value[4:].split(','))
    elif value.startswith('!'):
        none_of = {value[1:]}
    elif value.startswith('in:'):
        any_of = set(value[3:].split(','))
    else:
        any_of = {value}
    for aggregate in sorted(any_of | none_of):
        if not uuidutils.is_uuid_like(aggregate):
            raise errors.BadRequest(
                _INVALID + "Expected 'member_of' parameter to contain valid "
                "UUID(s). Got: %s" % aggregate)
    return any_of, none_of


def required_traits(req, suffix=''):
    """The ``required<suffix>`` filters of a request.

    Returns ``(required, forbidden)``: ``required`` is a list of sets of
    trait names (the provider must have at least one trait of every set),
    ``forbidden`` a set of trait names it must have none of.
    """
    allow_forbidden = microversion.at_least(req, '1.22')
    allow_any_of = microversion.at_least(req, '1.39')
    given = values(req, 'required' + suffix)
    if not allow_any_of:
        given = given[-1:]
    required = []
    forbidden = set()
    for value in given:
        any_ofs, none_of = parse_traits(value, allow_forbidden, allow_any_of)
        required.extend(any_ofs)
        forbidden |= none_of
    return required, forbidden


def parse_traits(value, allow_forbidden, allow_any_of):
    """One ``required`` value: (list of any-of sets, forbidden set)."""
    if value.startswith('in:'):
        return [_any_of_traits(value, allow_any_of)], set()
    names = [name.strip() for name in value.split(',')]
    # Any run of leading '!' forbids the name that follows, as in the
    # reference.
    forbidden = {name.lstrip('!') for name in names if name.startswith('!')}
    if not all(itertools.chain(names, forbidden)):
        example = ('HW_CPU_X86_VMX,!CUSTOM_MAGIC' if allow_forbidden
                   else 'HW_CPU_X86_VMX,CUSTOM_MAGIC')
        raise errors.BadRequest(
            _INVALID + "Expected 'required' parameter value of the form: "
            "%s. Got an empty trait in: %s" % (example, value))
    if forbidden and not allow_forbidden:
        raise errors.BadRequest(
            _INVALID + "Expected 'required' parameter value of the form: "
            "HW_CPU_X86_VMX,CUSTOM_MAGIC. Got: %s" % value)
    required = [{name} for name in names if not name.startswith('!')]
    return required, forbidden


def _any_of_traits(value, allow_any_of):
    if not allow_any_of:
        raise errors.BadRequest(
            _INVALID + "The format 'in:HW_CPU_X86_VMX,CUSTOM_MAGIC' only "
            "supported since microversion 1.39. Got: %s" % value)
    names = {name.strip() for name in value[3:].split(',')}
    if not all(names):
        raise errors.BadRequest(
            _INVALID + "Expected 'required' parameter value of the form: "
            "in:HW_CPU_X86_VMX,CUSTOM_MAGIC. Got an empty trait in: %s"
            % value)
    if any(name.startswith('!') for name in names):
        raise errors.BadRequest(
            _INVALID + "The format 'in:HW_CPU_X86_VMX,CUSTOM_MAGIC' does not "
            "support forbidden traits. Got: %s" % value)
    return names


def in_tree(value):
    """An ``in_tree`` value: the provider uuid, stripped."""
    uuid = value.strip()
    if not uuidutils.is_uuid_like(uuid):
        raise errors.BadRequest(
            _INVALID + "Expected 'in_tree' parameter to be a format of uuid. "
            "Got: %s" % value)
    return uuid


def resources(value):
    """A ``resources`` value: {resource class name: positive amount}.

    A class named twice keeps its last amount.
    """
    expected = ('Badly formed resources parameter. Expected resources query '
                'string parameter in form: ?resources=VCPU:2,MEMORY_MB:1024. '
                'Got: %s.')
    if not value.strip():
        raise errors.BadRequest(expected % 'empty string')
    amounts = {}
    for item in value.split(','):
        try:
            name, amount = item.split(':')
        except ValueError:
            raise errors.BadRequest(expected % item)
        try:
            amount = int(amount)
        except ValueError:
            raise errors.BadRequest(
                'Requested resource %s expected positive integer amount. '
                'Got: %s.' % (name, amount))
        if amount < 1:
            raise errors.BadRequest(
                'Requested resource %s requires amount >= 1. Got: %d.'
                % (name, amount))
        amounts[name] = amount
    return amounts
