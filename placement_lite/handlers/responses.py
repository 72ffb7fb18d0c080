"""What the handlers answer, and what a request must accept and be to get
it: JSON bodies, the statuses without one, Location, and the checks of
the microversion, the content type and Accept that come first."""

import functools
import json

import webob.acceptparse

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


def render_json_pieces(resp, pieces):
    """render() for a body made into JSON bytes in ``pieces`` (200): they
    go out one after the other, never joined."""
    resp.status = 200
    resp.content_type = JSON
    resp.stream = pieces
    resp.content_length = sum(map(len, pieces))


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
    if not _accepts_json(req.get_header('accept') or None):
        raise errors.NotAcceptable('Only application/json is provided')


@functools.lru_cache(maxsize=64)
def _accepts_json(accept):
    """Whether the Accept header ``accept`` lets JSON be answered, worked
    out once per value seen: webob's parsing costs about 20 us, more than
    a small answer's rendering."""
    parsed = webob.acceptparse.create_accept_header(accept)
    return not parsed or bool(parsed.acceptable_offers([JSON]))


def location(req, path):
    """An absolute URL for ``path`` on this service (for ``Location``)."""
    return req.prefix + path
