"""The ranking parameters of GET /allocation_candidates (microversion 1.42,
api-ref/extensions.md): ``rank_by``, ``preferred{suffix}``,
``root_preferred`` and ``alternatives``, parsed from the query pairs.

Pure functions of the pairs and the groups already parsed, like
``request.parse_query``, which calls :func:`parse`; the search that uses
them is ``engine.ranked``. :func:`alternative_requests` turns a request with
alternatives into one request per choice of alternatives, in priority
order.
"""

import dataclasses
import functools
import itertools
import re
import typing

from placement_lite import errors
from placement_lite import querystring

SPREAD = 'spread'
PACK = 'pack'
#: ``preferred`` and its suffix, as group keys are written.
PREFERRED = re.compile(r'^preferred([a-zA-Z0-9_-]{1,64})?$')


class Order(typing.NamedTuple):
    """One term of ``rank_by``: most free first (spread) or least free
    first (pack) of one resource class."""

    direction: str
    resource_class: str

    def __str__(self):
        return '%s:%s' % self

    @property
    def sign(self):
        """What a free amount is multiplied by in the key: -1 to put the
        most first (spread), 1 the least (pack)."""
        return 1 if self.direction == PACK else -1


@dataclasses.dataclass(frozen=True)
class Ranking:
    #: Order terms, in the order they break ties.
    orders: tuple = ()
    #: {suffix: frozenset of trait names} preferred for each group.
    preferred: dict = dataclasses.field(default_factory=dict)
    #: Trait names preferred on the root of the candidate's tree.
    root_preferred: frozenset = frozenset()
    #: Sets of alternatives, each a tuple of suffixes in priority order.
    alternatives: tuple = ()

    def free_terms(self, class_ids):
        """((rc id, sign), ...) of the orders whose class is in
        ``class_ids`` ({name: id}), in order (see db.cloud.orders)."""
        return tuple((class_ids[order.resource_class], order.sign)
                     for order in self.orders
                     if order.resource_class in class_ids)

    @property
    def trait_names(self):
        """Every trait name the ranking prefers."""
        return self.root_preferred.union(*self.preferred.values())


def parse(pairs, groups):
    """The Ranking of the query ``pairs`` (whose request groups are
    ``groups``, {suffix: RequestGroup}), or None when they name no
    ranking parameter; raises errors.BadRequest."""
    names = {name for name, _value in pairs}
    if not ({'rank_by', 'root_preferred', 'alternatives'} & names
            or any(PREFERRED.match(name) for name in names)):
        return None
    return Ranking(
        _orders(querystring.only_value(pairs, 'rank_by')),
        _preferred(pairs, groups),
        _traits('root_preferred',
                querystring.only_value(pairs, 'root_preferred')),
        _alternatives(pairs, groups))


@functools.cache
def server_order(rank_by):
    """The Ranking ``[placement] allocation_candidates_rank_by`` gives
    requests that rank nothing (``rank_by``: the option's value), or None
    when it is unset; raises ValueError naming the option."""
    if not rank_by:
        return None
    try:
        return Ranking(_orders(rank_by))
    except errors.BadRequest as exc:
        raise ValueError('[placement] allocation_candidates_rank_by: %s'
                         % exc) from None


def _bad(message):
    return errors.BadRequest(message, code=errors.QUERYPARAM_BAD_VALUE)


def _orders(value):
    """The Order terms of a rank_by ``value``: ``spread:A,B,pack:C``; a
    class without a direction takes the one before it."""
    if value is None:
        return ()
    orders = []
    direction = None
    for part in value.split(','):
        part = part.strip()
        if ':' in part:
            direction, _colon, part = part.partition(':')
            direction = direction.strip()
            part = part.strip()
            if direction not in (SPREAD, PACK):
                raise _bad("rank_by=%s: expected 'spread:' or 'pack:' "
                           "before a resource class, got '%s:'."
                           % (value, direction))
        elif direction is None:
            raise _bad("rank_by=%s: the first resource class needs "
                       "'spread:' or 'pack:' before it." % value)
        if not part:
            raise _bad('rank_by=%s: an empty resource class.' % value)
        if any(order.resource_class == part for order in orders):
            raise _bad('rank_by=%s names %s twice.' % (value, part))
        orders.append(Order(direction, part))
    return tuple(orders)


def _traits(key, value):
    """The trait names of a preferred ``value`` (None: none)."""
    if value is None:
        return frozenset()
    names = [name.strip() for name in value.split(',')]
    if not all(names):
        raise _bad('%s=%s: an empty trait name.' % (key, value))
    odd = [name for name in names
           if name.startswith('!') or name.startswith('in:')]
    if odd:
        raise _bad('%s=%s: preferred traits are trait names, without ! '
                   'or in:.' % (key, value))
    return frozenset(names)


def _preferred(pairs, groups):
    """{suffix: preferred trait names}; the values of one key add up."""
    preferred = {}
    for name, value in pairs:
        match = PREFERRED.match(name)
        if not match:
            continue
        suffix = match.group(1) or ''
        if suffix not in groups:
            raise _bad('%s names no request group: there is no '
                       'resources%s, required%s or member_of%s.'
                       % (name, suffix, suffix, suffix))
        preferred[suffix] = preferred.get(suffix, frozenset()) | _traits(
            name, value)
    return preferred


def _alternatives(pairs, groups):
    """The alternatives sets: each value names two or more suffixed
    groups, each group in one set at most."""
    sets = []
    named = set()
    for name, value in pairs:
        if name != 'alternatives':
            continue
        suffixes = tuple(dict.fromkeys(part.strip()
                                       for part in value.split(',')))
        if '' in suffixes:
            raise _bad('alternatives=%s: the unsuffixed group can not be '
                       'an alternative.' % value)
        if len(suffixes) < 2:
            raise _bad('alternatives=%s: name at least two suffixed '
                       'groups.' % value)
        unknown = [suffix for suffix in suffixes if suffix not in groups]
        if unknown:
            raise _bad('alternatives=%s names suffixes no group of the '
                       'request has: %s.' % (value, unknown))
        twice = [suffix for suffix in suffixes if suffix in named]
        if twice:
            raise _bad('alternatives=%s: %s already in another '
                       'alternatives set.' % (value, ', '.join(twice)))
        named.update(suffixes)
        sets.append(suffixes)
    return tuple(sets)


@dataclasses.dataclass(frozen=True)
class Alternative:
    """One choice of alternatives: its rank (the index in each set) and
    the request using them."""

    rank: tuple
    #: The suffixes used, one per set.
    used: tuple
    request: object


def alternative_requests(request):
    """An Alternative per choice of one suffix in each alternatives set of
    ``request`` (a CandidateRequest with a Ranking), in priority order: the
    first alternative of each set first, the last set varying fastest.
    Without alternatives, the request itself (rank ``()``).

    In each, the other alternatives' groups are left out, and a suffix of
    a set named in same_subtree or group_policy=isolate:... stands for the
    alternative used."""
    sets = request.ranking.alternatives
    if not sets:
        return [Alternative((), (), request)]
    found = []
    for rank in itertools.product(*(range(len(s)) for s in sets)):
        used = tuple(s[i] for s, i in zip(sets, rank))
        rename = {suffix: chosen for s, chosen in zip(sets, used)
                  for suffix in s}
        left_out = set(rename) - set(used)

        def renamed(suffixes):
            return {rename.get(suffix, suffix) for suffix in suffixes}

        found.append(Alternative(rank, used, dataclasses.replace(
            request,
            groups={suffix: group for suffix, group
                    in request.groups.items() if suffix not in left_out},
            same_subtrees=[renamed(s) for s in request.same_subtrees],
            subtree_exclusions=[(renamed(inside), renamed(outside))
                                for inside, outside
                                in request.subtree_exclusions],
            isolated=frozenset(renamed(request.isolated)))))
    return found
