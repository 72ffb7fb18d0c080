"""Errors and their rendering.

Handlers and domain code raise the exceptions defined here; ``app.py`` turns
them into responses in the reference's error format::

    {"errors": [{"status": 404, "title": "Not Found",
                 "detail": "The resource could not be found.\\n\\n ...  ",
                 "code": "placement.undefined_code",   # from 1.23
                 "request_id": "req-..."}]}

Clients parse some of these details, so ``detail`` is built the way the
reference (webob) builds it: the status explanation, a blank line, then the
message.
"""

import http
import json
import re

import webob.acceptparse
import webob.exc

from placement_lite import microversion

# Error codes, as strings clients can rely on.
DEFAULT = 'placement.undefined_code'
INVENTORY_INUSE = 'placement.inventory.inuse'
CONCURRENT_UPDATE = 'placement.concurrent_update'
DUPLICATE_NAME = 'placement.duplicate_name'
PROVIDER_IN_USE = 'placement.resource_provider.inuse'
PROVIDER_CANNOT_DELETE_PARENT = (
    'placement.resource_provider.cannot_delete_parent')
RESOURCE_PROVIDER_NOT_FOUND = 'placement.resource_provider.not_found'
ILLEGAL_DUPLICATE_QUERYPARAM = 'placement.query.duplicate_key'
QUERYPARAM_BAD_VALUE = 'placement.query.bad_value'
QUERYPARAM_MISSING_VALUE = 'placement.query.missing_value'
DEVICE_PROFILE_NOT_FOUND = 'placement_lite.device_profile.not_found'
DEVICE_PROFILE_INVALID = 'placement_lite.device_profile.invalid'
DEVICE_PROFILE_DUPLICATE_NAME = 'placement_lite.device_profile.duplicate_name'
DEVICE_PROFILE_UNKNOWN = 'placement_lite.device_profile.unknown'
DEVICE_PROFILE_SUFFIX_IN_USE = 'placement_lite.device_profile.suffix_in_use'
#: A claim (1.43) whose candidates query finds nothing that fits.
CLAIM_NOTHING_FITS = 'placement_lite.claim.nothing_fits'
DEVICE_PROFILE_ALTERNATIVES_UNSUPPORTED = (
    'placement_lite.device_profile.alternatives_unsupported')
DEVICE_PROFILE_CAN_SPLIT_UNSUPPORTED = (
    'placement_lite.device_profile.can_split_unsupported')

REQUEST_ID_ENVIRON = 'openstack.request_id'
ERROR_CODE_ENVIRON = 'placement.error_code'
#: Response headers (lower case) an error's answer must leave out; set by
#: the error renderer, applied by ``app.OmitHeaders``.
OMIT_HEADERS_ENVIRON = 'placement_lite.omit_headers'

#: Where the reference answers an error, which decides its headers. Its
#: microversion middleware adds ``OpenStack-API-Version`` and ``Vary`` to
#: an answer its handlers return (their own 4xx included), but only
#: ``OpenStack-API-Version`` to an error raised past them (an unknown
#: route, a body without a content type, a policy refusal, a named object
#: that does not exist), and its outermost fault wrapper answers an
#: unexpected error with neither.
HANDLER = 'handler'
DISPATCHER = 'dispatcher'
FAULT = 'fault'
OMITTED_HEADERS = {HANDLER: (), DISPATCHER: ('vary',),
                   FAULT: ('vary', 'openstack-api-version')}

#: The body size ``[api] max_request_body_size`` allows, for the handlers.
MAX_BODY_ENVIRON = 'placement.max_body_size'
#: Why a request's body could not be read, when it could not (set by
#: ``request_body.RequestBody``, answered 400 by the application).
BODY_ERROR_ENVIRON = 'placement.body_error'

#: An error's message is cut to this many characters: messages quote what
#: the client sent (a name, a whole JSON value), which may be megabytes.
#: Far above the longest message the reference gives for a body of normal
#: size (a schema error quotes the whole schema, a few kilobytes).
MAX_DETAIL_LENGTH = 65536

_EXPLANATIONS = {
    400: ('The server could not comply with the request since it is either '
          'malformed or otherwise incorrect.'),
    401: ('This server could not verify that you are authorized to access '
          'the document you requested.  Either you supplied the wrong '
          'credentials (e.g., bad password), or your browser does not '
          'understand how to supply the credentials required.'),
    403: 'Access was denied to this resource.',
    404: 'The resource could not be found.',
    409: 'There was a conflict when trying to complete your request.',
    413: 'The body of your request was too large for this server.',
    500: ('The server has either erred or is incapable of performing the '
          'requested operation.'),
    503: ('The server is currently unavailable. Please try again at a '
          'later time.'),
}


class PlacementError(Exception):
    """An HTTP error with a status, a message and an error code."""

    status = 500
    #: :data:`HANDLER`, :data:`DISPATCHER` or :data:`FAULT`.
    answered_by = HANDLER

    def __init__(self, detail='', code=DEFAULT, headers=None,
                 answered_by=None):
        super().__init__(detail)
        self.detail = detail
        self.code = code
        self.headers = headers or {}
        if answered_by is not None:
            self.answered_by = answered_by


class BadRequest(PlacementError):
    status = 400


class Forbidden(PlacementError):
    status = 403


class NotFound(PlacementError):
    status = 404


class ObjectNotFound(NotFound):
    """A provider or resource class named in the path does not exist: the
    reference's object layer raises it past the handler."""

    answered_by = DISPATCHER


class MethodNotAllowed(PlacementError):
    status = 405


class NotAcceptable(PlacementError):
    status = 406


class Conflict(PlacementError):
    status = 409


class RequestTooLarge(PlacementError):
    status = 413

    def __init__(self, limit):
        super().__init__('The request body is larger than the %d bytes '
                         'this service accepts.' % limit)


class UnsupportedMediaType(PlacementError):
    status = 415


class ServerError(PlacementError):
    status = 500


class ServiceUnavailable(PlacementError):
    status = 503


_BREAK = re.compile(r'<br', re.I)
_COMMENT = re.compile(r'<!--|-->')
_TAG = re.compile(r'<')


def _replace_to_next_close(message, opening, replacement):
    """``re.sub(opening + '.*?>', replacement, message, flags=re.S)`` in
    time linear in ``message``: the regex looks for a ``>`` after every
    ``<`` it tries (quadratic on '<<<<...'), but once none follows one,
    none follows any later one either."""
    parts = []
    position = 0
    while True:
        found = opening.search(message, position)
        if found is None:
            break
        close = message.find('>', found.end())
        if close < 0:
            break
        parts += [message[position:found.start()], replacement]
        position = close + 1
    parts.append(message[position:])
    return ''.join(parts)


def _as_webob_text(message):
    """``message`` as webob leaves it in JSON errors: newlines become
    spaces, ``<br>`` a newline, other tags disappear."""
    message = message.replace('\n', ' ').replace('\r', '')
    message = _replace_to_next_close(message, _BREAK, '\n')
    message = _COMMENT.sub('', message)
    return _replace_to_next_close(message, _TAG, '')


def bounded(message):
    """``message``, cut to MAX_DETAIL_LENGTH characters."""
    if len(message) <= MAX_DETAIL_LENGTH:
        return message
    return '%s... (%d more characters)' % (
        message[:MAX_DETAIL_LENGTH], len(message) - MAX_DETAIL_LENGTH)


def detail_text(status, detail, environ):
    """The ``detail`` string as the reference renders it (bounded)."""
    detail = _as_webob_text(bounded(detail))
    if status == 405:
        return ('The method %s is not allowed for this resource. \n\n %s'
                % (environ.get('REQUEST_METHOD'), detail))
    if status == 406:
        return ('The resource could not be generated that was acceptable to '
                'your browser (content of type %s. \n\n %s'
                % (environ.get('HTTP_ACCEPT'), detail))
    if status == 415:
        return ('The request media type %s is not supported by this server. '
                '\n\n %s' % (environ.get('CONTENT_TYPE'), detail))
    return '%s\n\n %s  ' % (_EXPLANATIONS.get(status, ''), detail)


def error_document(status, detail_string, environ, code=None):
    """The JSON error document for a response of ``status``."""
    error = {
        'status': status,
        'title': http.HTTPStatus(status).phrase,
        'detail': detail_string,
    }
    version = environ.get(microversion.ENVIRON)
    if version is not None and version >= microversion.ERROR_CODES:
        error['code'] = code or environ.get(ERROR_CODE_ENVIRON) or DEFAULT
    if REQUEST_ID_ENVIRON in environ:
        error['request_id'] = environ[REQUEST_ID_ENVIRON]
    return {'errors': [error]}


def render(status, detail, environ, code=None):
    """``(content type, body)`` of an error response.

    Like the reference (whose errors are webob's), the client's ``Accept``
    picks the format: JSON when it prefers application/json (as it does
    when it sends none or ``*/*``), webob's HTML page when it prefers
    text/html, and webob's plain text when it accepts neither; HEAD gets
    an empty HTML answer.
    """
    if environ.get('REQUEST_METHOD') == 'HEAD':
        # webob answers HEAD with its bare response: no body, its default
        # content type.
        return 'text/html; charset=UTF-8', ''
    accept = webob.acceptparse.create_accept_header(
        environ.get('HTTP_ACCEPT', ''))
    offers = accept.acceptable_offers(['text/html', 'application/json'])
    chosen = offers[0][0] if offers else 'text/plain'
    if chosen == 'application/json':
        return 'application/json', json.dumps(error_document(
            status, detail_text(status, detail, environ), environ, code))
    page = webob.exc.status_map[status](detail=bounded(detail))
    # The reference's pages name a missing content type "None" (the 415
    # page quotes it), as the JSON detail does.
    environ = dict(environ, CONTENT_TYPE=str(environ.get('CONTENT_TYPE')))
    if chosen == 'text/html':
        return 'text/html; charset=UTF-8', page.html_body(environ)
    return 'text/plain; charset=UTF-8', page.plain_body(environ)


def webob_json_formatter(min_version, max_version):
    """A formatter for errors raised by webob-based middleware.

    The microversion middleware (from microversion-parse) reports malformed
    or unacceptable versions through webob; this keeps them in our format,
    with the supported range added to a 406 as the reference does.
    """
    def formatter(body, status, title, environ):
        status_code = int(status.split(None, 1)[0])
        document = error_document(status_code, webob.exc.strip_tags(body),
                                  environ)
        if status_code == 406 and microversion.ENVIRON not in environ:
            document['errors'][0]['max_version'] = max_version
            document['errors'][0]['min_version'] = min_version
        return document

    return formatter
