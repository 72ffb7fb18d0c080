"""Microversions: the versions served, the feature each one brought, and
the one way code asks which applies.

Parsing the ``OpenStack-API-Version`` header and ``latest`` are
microversion-parse's, and so are the 400 and 406 answers (its WSGI
middleware's); ``app.Microversion`` calls it and gives the version back
in the answer's headers. It leaves the request's version in the WSGI
environ as a ``(major, minor)`` named tuple, which compares with the
:class:`Version` constants below as tuples do. So code branches with
``microversion.of(req) >= microversion.NESTED_PROVIDERS`` in a handler and
``version >= microversion.NESTED_PROVIDERS`` below the handlers, which are
given the version, never the request; a handler refuses a route that does
not exist yet with ``handlers.responses.require_version`` and picks a JSON
schema with :func:`schema_for`.

This module imports only the standard library, so that errors.py, which
renders by microversion, and the openstackclient plugin, which must not
load the server, can use it (and so the 404 of a route not there yet is
raised in handlers.responses).
"""

import typing

SERVICE_TYPE = 'placement'
#: Where ``app.Microversion`` leaves a request's version.
ENVIRON = SERVICE_TYPE + '.microversion'


class Version(typing.NamedTuple):
    """A microversion, ordered as its (major, minor) tuple."""

    major: int
    minor: int

    def __str__(self):
        return '%d.%d' % self


# The reference's microversions, each named for what it introduced.
MINIMUM = Version(1, 0)
PROVIDER_AGGREGATES = Version(1, 1)
CUSTOM_RESOURCE_CLASSES = Version(1, 2)
PROVIDERS_MEMBER_OF = Version(1, 3)
PROVIDERS_RESOURCES = Version(1, 4)
DELETE_ALL_INVENTORIES = Version(1, 5)
TRAITS = Version(1, 6)
RESOURCE_CLASS_PUT_CREATES = Version(1, 7)
ALLOCATION_OWNERS = Version(1, 8)  # project_id and user_id required
PROJECT_USAGES = Version(1, 9)
ALLOCATION_CANDIDATES = Version(1, 10)
PROVIDER_ALLOCATIONS_LINK = Version(1, 11)
ALLOCATIONS_BY_PROVIDER = Version(1, 12)  # keyed by provider uuid
POST_ALLOCATIONS = Version(1, 13)
NESTED_PROVIDERS = Version(1, 14)
LAST_MODIFIED = Version(1, 15)
CANDIDATES_LIMIT = Version(1, 16)
CANDIDATES_REQUIRED = Version(1, 17)  # and traits in provider summaries
PROVIDERS_REQUIRED = Version(1, 18)
AGGREGATES_GENERATION = Version(1, 19)
CREATED_PROVIDER_BODY = Version(1, 20)  # POST answers with the provider
CANDIDATES_MEMBER_OF = Version(1, 21)
FORBIDDEN_TRAITS = Version(1, 22)
ERROR_CODES = Version(1, 23)
MULTIPLE_MEMBER_OF = Version(1, 24)
GRANULAR_GROUPS = Version(1, 25)
RESERVED_MAY_EQUAL_TOTAL = Version(1, 26)
SUMMARIES_ALL_RESOURCES = Version(1, 27)
CONSUMER_GENERATIONS = Version(1, 28)
NESTED_AWARE_CANDIDATES = Version(1, 29)
RESHAPER = Version(1, 30)
CANDIDATES_IN_TREE = Version(1, 31)
FORBIDDEN_AGGREGATES = Version(1, 32)
NAMED_GROUP_SUFFIXES = Version(1, 33)
GROUP_MAPPINGS = Version(1, 34)
ROOT_REQUIRED = Version(1, 35)
SAME_SUBTREE = Version(1, 36)
REPARENTING = Version(1, 37)
CONSUMER_TYPES = Version(1, 38)
ANY_TRAITS = Version(1, 39)

# placement_lite's own, served when [api] enable_extensions is set
# (api-ref/extensions.md).
DEVICE_PROFILES = Version(1, 40)
#: Explain for allocation candidates, and the nested features the
#: reference deferred: root_member_of, group_policy=isolate:<suffixes>,
#: same_subtree with ``!`` suffixes.
EXPLAIN = Version(1, 41)
#: Ranked allocation candidates: rank_by, preferred traits, prioritized
#: alternatives (engine/ranked.py); device profiles declaring
#: alternatives.
RANKED = Version(1, 42)
#: Device profiles may declare alternatives among their groups, which
#: expand into RANKED's ``alternatives``.
PROFILE_ALTERNATIVES = RANKED
#: Claims: POST /allocation_claims allocates the best candidate of a
#: candidates query to one or several consumers in one transaction
#: (domain/claims.py).
CLAIMS = Version(1, 43)
#: can_split: a group may take a class's amount from several providers of
#: a tree (engine/split.py).
CAN_SPLIT = Version(1, 44)

#: The newest microversion of openstack-placement 16.0.0.
REFERENCE_MAXIMUM = ANY_TRAITS
#: The newest with extensions.
EXTENSION_MAXIMUM = CAN_SPLIT


def versions(enable_extensions):
    """Every version served, oldest first, as the middleware and the
    version document spell them."""
    newest = EXTENSION_MAXIMUM if enable_extensions else REFERENCE_MAXIMUM
    return [str(Version(MINIMUM.major, minor))
            for minor in range(MINIMUM.minor, newest.minor + 1)]


def of(req):
    """The microversion of a falcon request (microversion-parse's
    Version: a (major, minor) named tuple)."""
    return req.env[ENVIRON]


def schema_for(version, schemas):
    """The schema of ``(since version, schema)`` pairs, newest first, in
    force at ``version``."""
    for since, schema in schemas:
        if version >= since:
            return schema
    raise ValueError('no schema at microversion %s' % (version,))


def schemas_since(since, build):
    """``(since version, schema)`` pairs, newest first, for a schema that
    ``build(version)`` writes: a pair from ``since`` and one from every
    later version where what it writes changes."""
    pairs = []
    for minor in range(since.minor, EXTENSION_MAXIMUM.minor + 1):
        version = Version(since.major, minor)
        schema = build(version)
        if not pairs or schema != pairs[-1][1]:
            pairs.append((version, schema))
    return pairs[::-1]
