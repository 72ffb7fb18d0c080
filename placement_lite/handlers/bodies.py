"""Request bodies as the handlers take them: declared JSON, read within
``[api] max_request_body_size``, parsed (request_json) and validated
against the route's schema (validation)."""

import contextlib

from placement_lite import errors
from placement_lite import request_json
from placement_lite.domain import providers
from placement_lite.handlers import responses
from placement_lite.handlers import validation

def json_body(req, schema=None, code=errors.DEFAULT):
    """The request's JSON body, validated against ``schema`` when given.

    415 when it is not JSON, 400 when it does not parse or validate, as the
    reference answers; ``code`` is the error code of a validation failure.
    The body must be UTF-8 (a byte order mark is refused, as the reference
    refuses it), hold no string the database cannot store and nest at most
    :data:`request_json.MAX_JSON_DEPTH` levels deep.
    """
    responses.require_json_content(req)
    data = request_json.parsed(read_body(req))
    if schema is not None:
        validation.validate(data, schema, code)
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


def read_body(req):
    """The request body: 413 beyond ``[api] max_request_body_size``, read
    or announced (the app middleware refuses an announced length first)."""
    limit = req.env[errors.MAX_BODY_ENVIRON]
    raw = req.bounded_stream.read(limit + 1)
    if len(raw) > limit:
        raise errors.RequestTooLarge(limit)
    return raw
