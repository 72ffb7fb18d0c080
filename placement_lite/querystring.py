"""Parsers for the values of the query-string languages Placement shares
between routes (``member_of``, ``required``, ``in_tree``, ``resources``).

Pure functions of one value (or of the query's pairs): they raise
:class:`placement_lite.errors.BadRequest` with the reference's messages and
know nothing of HTTP or the database. ``placement_lite.handlers.query``
applies them to a request's parameters; the allocation-candidates engine
applies them to query pairs.
"""

import itertools
import re

from oslo_utils import uuidutils

from placement_lite import errors
from placement_lite import microversion

#: The parameters of a request group of GET /allocation_candidates, and
#: the suffixes naming a group: numbers, then names from 1.33.
GROUP_PREFIXES = ('resources', 'required', 'member_of', 'in_tree')
NUMBERED_SUFFIX = r'[1-9][0-9]*'
NAMED_SUFFIX = r'[a-zA-Z0-9_-]{1,64}'
#: group_policy=isolate:<suffixes> (1.41): isolation of the groups named.
ISOLATE_NAMED = 'isolate:'


def group_key_pattern(version):
    """The regex for a group key (``resources``, ``required_NIC``, ...)."""
    suffix = (NAMED_SUFFIX if version >= microversion.NAMED_GROUP_SUFFIXES
              else NUMBERED_SUFFIX)
    return re.compile(r'^(%s)(%s)?$' % ('|'.join(GROUP_PREFIXES), suffix))


_INVALID = 'Invalid query string parameters: '
#: The largest amount a database integer holds (the reference fails with
#: a 500 beyond it).
MAX_AMOUNT = 2 ** 63 - 1


#: A uuid as str(uuid.UUID) writes it, in either case.
_PLAIN_UUID = re.compile(r'[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-'
                         r'[0-9a-fA-F]{4}-[0-9a-fA-F]{12}')


def is_uuid_like(value):
    """oslo's is_uuid_like, answered at once for what it surely takes
    (the usual spelling) or refuses (not a string, or shorter than the
    32 digits it needs): a body of 27,000 aggregates is checked item by
    item, a member_of of a hundred aggregates in a tenth of the time."""
    if not isinstance(value, str) or len(value) < 32:
        return False
    return bool(_PLAIN_UUID.fullmatch(value)) or uuidutils.is_uuid_like(value)


def only_value(pairs, key):
    """The value of ``key`` among the query ``pairs``, given at most once,
    or None."""
    values = [value for name, value in pairs if name == key]
    if len(values) > 1:
        raise errors.BadRequest(
            "Query parameter '%s' may be specified only once." % key,
            code=errors.ILLEGAL_DUPLICATE_QUERYPARAM)
    return values[0] if values else None


def member_of_value(value, key='member_of'):
    """One value of ``key`` (``member_of`` or ``root_member_of``): (uuids
    one of which is required, forbidden uuids)."""
    if ',' in value and not value.startswith(('in:', '!in:')):
        raise errors.BadRequest(
            "Multiple values for '%s' must be prefixed with the "
            "'in:' or '!in:' keyword using the valid microversion. "
            "Got: %s" % (key, value))
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
        if not is_uuid_like(aggregate):
            raise errors.BadRequest(
                _INVALID + "Expected '%s' parameter to contain valid "
                "UUID(s). Got: %s" % (key, aggregate))
    return any_of, none_of


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
    if not is_uuid_like(uuid):
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
        if amount > MAX_AMOUNT:
            raise errors.BadRequest(
                'Requested resource %s requires amount <= %d. Got: %d.'
                % (name, MAX_AMOUNT, amount))
        amounts[name] = amount
    return amounts
