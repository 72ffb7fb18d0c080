"""Parsing a GET /allocation_candidates query into request groups.

:func:`parse_query` is a pure function of the query pairs and the
microversion: it knows nothing of HTTP or the database. Callers that want to
add groups (device profiles, for example) can add their own
``resources<suffix>=...`` pairs before calling it; every group, however it
was written, then goes through the same checks.

The answers to malformed input (status, message, error code) are those of
the reference service, in the same order of precedence: request-wide
parameters first, then each query pair in order, then the checks over the
whole set of groups.
"""

import dataclasses
import re
import uuid as uuidlib

from placement_lite import errors
from placement_lite import microversion
from placement_lite import querystring
from placement_lite.engine import rank_query
from placement_lite.schemas import common

@dataclasses.dataclass
class RequestGroup:
    """What one group asks for.

    The unsuffixed group (suffix ``''``) may be served by several providers
    of one tree plus sharing providers; every suffixed group is served by
    exactly one provider.
    """

    suffix: str = ''
    #: {resource class name: amount}, in query order.
    resources: dict = dataclasses.field(default_factory=dict)
    #: A list of sets of trait names: all sets must match, any trait of a set.
    required_traits: list = dataclasses.field(default_factory=list)
    forbidden_traits: set = dataclasses.field(default_factory=set)
    #: A list of sets of aggregate uuids: all sets must match, any of a set.
    member_of: list = dataclasses.field(default_factory=list)
    forbidden_aggregates: set = dataclasses.field(default_factory=set)
    in_tree: str = None

    @property
    def use_same_provider(self):
        return bool(self.suffix)


@dataclasses.dataclass
class CandidateRequest:
    """The whole request: its groups (by suffix, in query order) and the
    parameters that apply to all of them."""

    groups: dict
    limit: int = None
    group_policy: str = None
    root_required: set = dataclasses.field(default_factory=set)
    root_forbidden: set = dataclasses.field(default_factory=set)
    #: root_member_of (1.41): a list of sets of aggregate uuids (the root in
    #: one of each set), and uuids the root must be in none of.
    root_member_of: list = dataclasses.field(default_factory=list)
    root_forbidden_aggregates: set = dataclasses.field(default_factory=set)
    #: A list of sets of suffixes (from a value with ``!`` suffixes, those
    #: without).
    same_subtrees: list = dataclasses.field(default_factory=list)
    #: same_subtree values with ``!`` suffixes (1.41): (suffixes in one
    #: subtree, suffixes kept out of it) pairs.
    subtree_exclusions: list = dataclasses.field(default_factory=list)
    #: The suffixes group_policy isolates: every suffixed group with
    #: ``isolate``, those named with ``isolate:`` (1.41).
    isolated: frozenset = frozenset()
    #: explain (1.41): None, True, or the uuid of the provider whose tree
    #: to explain.
    explain: object = None
    #: rank_query.Ranking (1.42), or None: candidates in the unranked order.
    ranking: object = None
    #: The microversion the request was parsed at: its rules decide what
    #: the query may say, and some of what the engine makes of it.
    version: microversion.Version = microversion.EXTENSION_MAXIMUM

    @property
    def nested_aware(self):
        """Whether a candidate may take resources from several providers
        of one tree, and summaries show every provider of the trees
        returned (from 1.29)."""
        return self.version >= microversion.NESTED_AWARE_CANDIDATES

    @property
    def requested_resource_classes(self):
        return {rc for group in self.groups.values() for rc in group.resources}


def _values(pairs, key):
    return [value for name, value in pairs if name == key]


def parse_query(pairs, version):
    """A :class:`CandidateRequest` from the query ``pairs`` at ``version``
    (a ``(major, minor)`` tuple); raises ``errors.BadRequest``.

    The query must already have passed the schema for ``version``.
    """
    request = CandidateRequest(groups={},
                               version=microversion.Version(*version))
    extended = version >= microversion.EXPLAIN
    _parse_request_wide(request, pairs, extended)
    request.groups = _parse_groups(pairs, version)
    if version >= microversion.RANKED:
        request.ranking = rank_query.parse(pairs, request.groups)
    if version >= microversion.SAME_SUBTREE:
        _check_resourceless_groups(request)
    else:
        _check_orphans(request.groups)
    if version >= microversion.FORBIDDEN_TRAITS:
        _check_trait_conflicts(request.groups)
    _check_group_policy(request)
    request.isolated = _isolated_suffixes(request)
    return request


def _parse_request_wide(request, pairs, extended):
    """The parameters that apply to every group; ``extended``: at 1.41 or
    later, with placement_lite's own (see api-ref/extensions.md)."""
    limits = _values(pairs, 'limit')
    if limits:
        request.limit = _positive_int(limits[0])
    policies = _values(pairs, 'group_policy')
    if policies:
        request.group_policy = policies[0]
    root_required = querystring.only_value(pairs, 'root_required')
    if root_required is not None:
        # root_required knows no 'in:' alternatives.
        required, forbidden = querystring.parse_traits(
            root_required, True, False)
        request.root_required = {name for names in required for name in names}
        request.root_forbidden = forbidden
        conflicts = request.root_required & forbidden
        if conflicts:
            raise errors.BadRequest(
                'Conflicting required and forbidden traits found in '
                'root_required: %s' % ', '.join(sorted(conflicts)),
                code=errors.QUERYPARAM_BAD_VALUE)
    for value in _values(pairs, 'same_subtree'):
        parts = [part.strip() for part in value.split(',')]
        kept_out = set()
        if extended:
            kept_out = {part[1:].strip() for part in parts
                        if part.startswith('!')}
            parts = [part for part in parts if not part.startswith('!')]
        suffixes = set(parts)
        if '' in suffixes | kept_out:
            raise errors.BadRequest(
                'Empty string (unsuffixed group) can not be specified in '
                '`same_subtree` ', code=errors.QUERYPARAM_BAD_VALUE)
        if kept_out:
            request.subtree_exclusions.append(
                _subtree_exclusion(value, suffixes, kept_out))
        request.same_subtrees.append(suffixes)
    if extended:
        _parse_extensions(request, pairs)


def _subtree_exclusion(value, suffixes, kept_out):
    """(suffixes, kept_out) of a same_subtree ``value`` with ``!``
    suffixes."""
    if not suffixes:
        raise errors.BadRequest(
            'same_subtree=%s: a value with ! suffixes needs at least one '
            'suffix without !.' % value, code=errors.QUERYPARAM_BAD_VALUE)
    both = suffixes & kept_out
    if both:
        raise errors.BadRequest(
            'same_subtree=%s names %s both with and without !.'
            % (value, ', '.join(sorted(both))),
            code=errors.QUERYPARAM_BAD_VALUE)
    return suffixes, kept_out


def _parse_extensions(request, pairs):
    """root_member_of and explain (1.41)."""
    for value in _values(pairs, 'root_member_of'):
        any_of, none_of = querystring.member_of_value(value,
                                                      'root_member_of')
        if any_of:
            request.root_member_of.append(any_of)
        request.root_forbidden_aggregates |= none_of
    explain = querystring.only_value(pairs, 'explain')
    if explain is not None:
        request.explain = _explain(explain)


def _explain(value):
    """True, None (``false``) or the provider uuid, in its canonical
    form, of an ``explain`` value."""
    if value in ('true', 'false'):
        return True if value == 'true' else None
    if not querystring.is_uuid_like(value):
        raise errors.BadRequest(
            "Invalid query string parameters: Expected 'explain' parameter "
            "to be true, false or a resource provider uuid. Got: %s" % value,
            code=errors.QUERYPARAM_BAD_VALUE)
    return str(uuidlib.UUID(value))


def _positive_int(value):
    """The schema already checked the last ``limit``; an earlier one may
    still be anything. A limit larger than any answer limits nothing, as
    in the reference (which slices a list): it is cut to MAX_INT, which
    keeps the engine's SQL (windows of twice the limit) within bigint."""
    if not re.match(r'^[1-9][0-9]*$', value):
        raise errors.BadRequest(
            "Invalid query string parameters: 'limit' must be a positive "
            "integer. Got: %s" % value)
    if len(value) > len(str(common.MAX_INT)):
        return common.MAX_INT
    return min(int(value), common.MAX_INT)


def _parse_groups(pairs, version):
    pattern = querystring.group_key_pattern(version)
    groups = {}
    for key, value in pairs:
        match = pattern.match(key)
        if not match:
            continue
        prefix, suffix = match.groups()
        suffix = suffix or ''
        group = groups.setdefault(suffix, RequestGroup(suffix=suffix))
        if prefix == 'resources':
            group.resources = querystring.resources(value)
        elif prefix == 'required':
            group.required_traits, group.forbidden_traits = (
                _group_traits(pairs, key, version))
        elif prefix == 'member_of':
            group.member_of, group.forbidden_aggregates = (
                _group_aggregates(pairs, suffix, version))
        else:
            group.in_tree = querystring.in_tree(value)
    return groups


def _group_traits(pairs, key, version):
    values = _values(pairs, key)
    if version < microversion.ANY_TRAITS:
        # Before any-traits, only the last of repeated values counts.
        values = values[-1:]
    required, forbidden = [], set()
    for value in values:
        more_required, more_forbidden = querystring.parse_traits(
            value, version >= microversion.FORBIDDEN_TRAITS,
            version >= microversion.ANY_TRAITS)
        required += more_required
        forbidden |= more_forbidden
    return required, forbidden


def _group_aggregates(pairs, suffix, version):
    key = 'member_of' + suffix
    values = _values(pairs, key)
    if version < microversion.MULTIPLE_MEMBER_OF and len(values) > 1:
        raise errors.BadRequest(
            'Multiple member_of%s parameters are not supported' % suffix)
    required, forbidden = [], set()
    for value in values:
        any_of, none_of = querystring.member_of_value(value)
        if any_of:
            required.append(any_of)
        if none_of:
            if version < microversion.FORBIDDEN_AGGREGATES:
                raise errors.BadRequest(
                    'Forbidden member_of%s parameters are not supported in '
                    'the specified microversion' % suffix)
            forbidden |= none_of
    return required, forbidden


def _check_resourceless_groups(request):
    """From 1.36 a group may have no resources if same_subtree names it."""
    groups = request.groups
    resourceless = [suffix for suffix, group in groups.items()
                    if not group.resources]
    if len(resourceless) == len(groups):
        raise errors.BadRequest(
            'There must be at least one resources or resources[$S] '
            'parameter.', code=errors.QUERYPARAM_MISSING_VALUE)
    in_subtrees = set().union(*request.same_subtrees, *(
        kept_out for _suffixes, kept_out in request.subtree_exclusions))
    unnamed = [suffix for suffix in resourceless if suffix not in in_subtrees]
    if unnamed:
        raise errors.BadRequest(
            'Resourceless suffixed group request should be specified in '
            '`same_subtree` query param: bad group(s) - %s.' % unnamed,
            code=errors.QUERYPARAM_BAD_VALUE)
    unknown = [suffix for suffix in sorted(in_subtrees) if suffix not in groups]
    if unknown:
        raise errors.BadRequest(
            'Real suffixes should be specified in `same_subtree`: %s not '
            'found in %s.' % (unknown, list(groups)),
            code=errors.QUERYPARAM_BAD_VALUE)


def _check_orphans(groups):
    """Before 1.36 every group needs resources."""
    orphans = ['required' + suffix for suffix, group in groups.items()
               if group.required_traits and not group.resources]
    if orphans:
        raise errors.BadRequest(
            'All traits parameters must be associated with resources.  '
            'Found the following orphaned traits keys: %s'
            % ', '.join(orphans))
    orphans = ['member_of' + suffix for suffix, group in groups.items()
               if not group.resources
               and (group.member_of or group.forbidden_aggregates)]
    if orphans:
        raise errors.BadRequest(
            'All member_of parameters must be associated with resources. '
            'Found the following orphaned member_of keys: %s'
            % ', '.join(orphans))
    if not all(group.resources for group in groups.values()):
        raise errors.BadRequest('All request groups must specify resources.')
    if not groups:
        raise errors.BadRequest(
            'At least one request group (`resources` or `resources{$S}`) is '
            'required.')


def _check_trait_conflicts(groups):
    conflicts = []
    for suffix, group in groups.items():
        for alternatives in group.required_traits:
            if alternatives <= group.forbidden_traits:
                conflicts.append('required%s: (%s)' % (
                    suffix, ', '.join(sorted(alternatives))))
    if conflicts:
        raise errors.BadRequest(
            'Conflicting required and forbidden traits found in the '
            'following traits keys: %s' % ', '.join(sorted(conflicts)))


def _check_group_policy(request):
    """The reference still insists on group_policy with several suffixed
    groups (the groups of one alternatives set, 1.42, count as one)."""
    suffixed = [group for group in request.groups.values()
                if group.use_same_provider]
    sets = request.ranking.alternatives if request.ranking else ()
    together = len(suffixed) - sum(len(s) - 1 for s in sets)
    if request.group_policy is None and together > 1:
        raise errors.BadRequest(
            'The "group_policy" parameter is required when specifying more '
            'than one "resources{N}" parameter.')


def _isolated_suffixes(request):
    """The suffixes group_policy isolates from one another."""
    policy = request.group_policy
    if policy == 'isolate':
        return frozenset(suffix for suffix in request.groups if suffix)
    if not (policy or '').startswith(querystring.ISOLATE_NAMED):
        return frozenset()
    named = {part.strip() for part
             in policy[len(querystring.ISOLATE_NAMED):].split(',')}
    if '' in named:
        raise errors.BadRequest(
            'The unsuffixed group can not be isolated: got an empty suffix '
            'in group_policy=%s.' % policy, code=errors.QUERYPARAM_BAD_VALUE)
    if len(named) < 2:
        raise errors.BadRequest(
            'The group_policy isolate: form must name at least two suffixed '
            'groups. Got: %s' % policy, code=errors.QUERYPARAM_BAD_VALUE)
    unknown = sorted(named - set(request.groups))
    if unknown:
        raise errors.BadRequest(
            'The group_policy isolate: form names suffixes no group of the '
            'request has: %s.' % unknown, code=errors.QUERYPARAM_BAD_VALUE)
    return frozenset(named)
