"""Microversions: the supported range and helpers for handlers.

Parsing the ``OpenStack-API-Version`` header, ``latest``, the 400 and 406
answers and the response headers are done by microversion-parse's WSGI
middleware (see ``app.py``); handlers only ask "is this request at least
version X?" through :func:`at_least` or gate a whole route with
:func:`require`.
"""

from placement_lite import errors

SERVICE_TYPE = 'placement'
MIN_VERSION = '1.0'
REFERENCE_MAX_VERSION = '1.39'
#: placement_lite's own microversions, served when extensions are enabled,
#: each named by what it adds (api-ref/extensions.md).
DEVICE_PROFILES = '1.40'
#: Explain for allocation candidates, and the nested features the
#: reference deferred: root_member_of, group_policy=isolate:<suffixes>,
#: same_subtree with ``!`` suffixes.
EXPLAIN = '1.41'
EXTENSION_VERSIONS = [DEVICE_PROFILES, EXPLAIN]


def versions(enable_extensions):
    """The ordered list of versions the service answers to."""
    reference = ['1.%d' % minor
                 for minor in range(parse(REFERENCE_MAX_VERSION)[1] + 1)]
    return reference + (EXTENSION_VERSIONS if enable_extensions else [])


def parse(version_string):
    major, minor = version_string.split('.')
    return int(major), int(minor)


def of(req):
    """The microversion of a falcon request."""
    return req.env[errors.MICROVERSION_ENVIRON]


def at_least(req, version_string):
    return of(req).matches(parse(version_string))


def require(req, min_version, max_version=None):
    """404, as the reference answers, when the route does not exist at this version."""
    version = of(req)
    if not version.matches(parse(min_version),
                           parse(max_version) if max_version else None):
        raise errors.NotFound('')
