"""The WSGI application: falcon routes wrapped in the shared middleware.

A request passes, outside in::

    request body -> request id -> request log -> proxy headers
      -> JSON by default -> CORS (when configured) -> auth -> request context
      -> omitted headers -> microversion -> fault wrapper -> falcon router
      -> handler (one module per resource in placement_lite.handlers)
"""

import functools
import gc
import http
import logging
import re

import falcon
from keystonemiddleware import auth_token
import microversion_parse
from microversion_parse import middleware as microversion_middleware
from oslo_context import context as oslo_context
from oslo_middleware import cors
from oslo_middleware import healthcheck
from oslo_middleware import http_proxy_to_wsgi
from oslo_middleware import request_id
import webob.exc

from placement_lite import closing
from placement_lite import conf as config
from placement_lite import context
from placement_lite import drain
from placement_lite import engine
from placement_lite import errors
from placement_lite import metrics
from placement_lite import microversion
from placement_lite import policy
from placement_lite import request_body
from placement_lite import requestlog
from placement_lite import routes
from placement_lite.db import api as db_api
from placement_lite.db.cloud import shared as cloud_shared
from placement_lite.domain import standard_names
from placement_lite.handlers import candidates_answer

LOG = logging.getLogger(__name__)


def _is_root(environ):
    return environ.get('PATH_INFO', '') in ('/', '')


def _unauthorized(environ, start_response):
    """The reference's 401: webob's, in the format the client accepts."""
    return webob.exc.HTTPUnauthorized()(environ, start_response)


class NoAuth:
    """Development auth: the token is ``user[:project]``; ``admin`` is admin."""

    def __init__(self, application):
        self.application = application

    def __call__(self, environ, start_response):
        if environ.get('PATH_INFO') == '/':
            return self.application(environ, start_response)
        token = environ.get('HTTP_X_AUTH_TOKEN')
        if token is None:
            return _unauthorized(environ, start_response)
        user_id, _sep, project_id = token.partition(':')
        if 'HTTP_X_ROLES' in environ:
            roles = environ['HTTP_X_ROLES'].split(',')
        elif user_id == 'admin':
            roles = ['admin']
        else:
            roles = []
        environ['HTTP_X_USER_ID'] = user_id
        if not environ.get('HTTP_OPENSTACK_SYSTEM_SCOPE'):
            environ['HTTP_X_TENANT_ID'] = project_id or user_id
        environ['HTTP_X_ROLES'] = ','.join(roles)
        return self.application(environ, start_response)


class KeystoneAuth(auth_token.AuthProtocol):
    """keystonemiddleware's auth_token, except for the version document."""

    def __init__(self, application, conf):
        self._unprotected = application
        super().__init__(application, {'oslo_config_config': conf})

    def __call__(self, environ, start_response):
        if _is_root(environ):
            return self._unprotected(environ, start_response)
        return super().__call__(environ, start_response)


class Healthcheck:
    """``/healthcheck``, before anything else: oslo.middleware's
    healthcheck, with the drain's readiness (``drain.DrainCheck``) always
    among the backends ``[healthcheck]`` names. Not a route of the
    reference's (api-ref/divergences.md)."""

    PATH = '/healthcheck'

    def __init__(self, application, conf):
        backends = conf.healthcheck.backends
        if drain.HEALTHCHECK_BACKEND not in backends:
            conf.set_override('backends',
                              [drain.HEALTHCHECK_BACKEND] + backends,
                              group='healthcheck')
        self.application = application
        # A client outside [healthcheck] allowed_source_ranges goes on to
        # the API, which has no such route.
        self.check = healthcheck.Healthcheck(application, conf)

    def __call__(self, environ, start_response):
        if environ.get('PATH_INFO') == self.PATH:
            return self.check(environ, start_response)
        return self.application(environ, start_response)


def _as_webob_answers(environ, answer):
    """``answer`` as a webob Response passed on answers it: without its
    body to a HEAD request (webob's EmptyResponse), closed when the
    server closes it."""
    if environ.get('REQUEST_METHOD') != 'HEAD':
        return answer
    return closing.Answer((), getattr(answer, 'close', lambda: None))


class RequestId:
    """oslo.middleware's RequestId, answers passed on without webob: a
    request id made for each request and given back in
    ``x-openstack-request-id`` (unless the answer has one), and the
    caller's global request id kept when it is well formed. (webob's
    request and response objects around every answer cost more than the
    rest of this middleware.)"""

    _GLOBAL_ID = re.compile(request_id.ID_FORMAT)
    _GLOBAL_ID_HEADER = 'HTTP_' + request_id.INBOUND_HEADER.upper().replace(
        '-', '_')

    def __init__(self, application):
        self.application = application

    def __call__(self, environ, start_response):
        if self._GLOBAL_ID.match(environ.get(self._GLOBAL_ID_HEADER, '')):
            environ[request_id.GLOBAL_REQ_ID] = environ[
                self._GLOBAL_ID_HEADER]
        given = oslo_context.generate_request_id()
        environ[request_id.ENV_REQUEST_ID] = given

        def with_request_id(status, headers, exc_info=None):
            if not any(name.lower() == request_id.HTTP_RESP_HEADER_REQUEST_ID
                       for name, _value in headers):
                headers = headers + [
                    (request_id.HTTP_RESP_HEADER_REQUEST_ID, given)]
            return start_response(status, headers, exc_info)

        return _as_webob_answers(environ, self.application(environ,
                                                           with_request_id))


class Microversion:
    """microversion_parse's MicroversionMiddleware, answers passed on
    without webob: the version asked for (microversion_parse reads it)
    in the environ, and given back in ``openstack-api-version`` with
    ``vary``. A version refused is answered by microversion_parse's
    middleware itself.

    What microversion_parse makes of a header depends on its value
    alone: the version and the headers that give it back are worked out
    once per value seen (the last ``KEPT`` of them), not per request."""

    KEPT = 64
    #: Where a PEP 3333 server leaves ``OpenStack-API-Version``, the only
    #: header microversion_parse reads of the environ for placement.
    HEADER = 'HTTP_' + microversion_parse.STANDARD_HEADER.upper().replace(
        '-', '_')

    def __init__(self, application, versions, refused):
        self.application = application
        self.versions = versions
        self.refused = refused
        self._given = functools.lru_cache(maxsize=self.KEPT)(self._worked_out)

    def _worked_out(self, header):
        """(version, the headers the answer gets) for the header's value
        (None: no header); ValueError or TypeError when it is refused."""
        version = microversion_parse.extract_version(
            {} if header is None else {self.HEADER: header},
            microversion.SERVICE_TYPE, self.versions)
        return version, [(microversion_parse.STANDARD_HEADER,
                          '%s %s' % (microversion.SERVICE_TYPE, version)),
                         ('vary', microversion_parse.STANDARD_HEADER)]

    def __call__(self, environ, start_response):
        try:
            version, added = self._given(environ.get(self.HEADER))
        except (ValueError, TypeError):
            return self.refused(environ, start_response)
        environ[microversion.ENVIRON] = version

        def with_version(status, headers, exc_info=None):
            return start_response(status, headers + added, exc_info)

        return _as_webob_answers(environ, self.application(environ,
                                                           with_version))


class AcceptJson:
    """Errors come back as JSON when the client did not ask for anything else."""

    def __init__(self, application):
        self.application = application

    def __call__(self, environ, start_response):
        if environ.get('HTTP_ACCEPT', '*/*') == '*/*':
            environ['HTTP_ACCEPT'] = 'application/json'
        return self.application(environ, start_response)


class ContextMiddleware:
    """Build the request context from the identity headers auth left."""

    def __init__(self, application, conf, db, enforcer):
        self.application = application
        self.conf = conf
        self.db = db
        self.enforcer = enforcer

    def __call__(self, environ, start_response):
        ctx = context.RequestContext.from_environ(
            environ, request_id=environ.get(errors.REQUEST_ID_ENVIRON),
            conf=self.conf, db=self.db, enforcer=self.enforcer)
        if ctx.user_id is None and not _is_root(environ):
            return _unauthorized(environ, start_response)
        environ['placement.context'] = ctx
        return self.application(environ, start_response)


def unexpected_error(exc, environ):
    """The error to answer for an exception nothing expected: 503 while the
    database cannot be reached, or when a write met concurrent ones on each
    of its attempts (the request changed nothing; the client may retry),
    otherwise a 500 carrying the exception's text, as the reference's does.
    Logged once, with the request id the answer gives."""
    request_id = environ.get(errors.REQUEST_ID_ENVIRON)
    environ[errors.OMIT_HEADERS_ENVIRON] = errors.OMITTED_HEADERS[
        errors.FAULT]
    if isinstance(exc, db_api.StillConflicting):
        LOG.warning('%s: write given up: %s', request_id, exc)
        return errors.ServiceUnavailable(
            'The write met concurrent writes on each of its attempts and '
            'changed nothing; retry it.', answered_by=errors.FAULT)
    if db_api.is_unavailable(exc):
        LOG.warning('%s: database unavailable: %s', request_id, exc)
        return errors.ServiceUnavailable(
            'The placement database is unavailable.',
            answered_by=errors.FAULT)
    LOG.exception('%s: unexpected error: %s', request_id, exc)
    return errors.ServerError(str(exc), answered_by=errors.FAULT)


class OmitHeaders:
    """Leave out of an error's answer the headers the reference would not
    give it (see ``errors.answered_by``): the microversion middleware
    inside adds them to every answer."""

    def __init__(self, application):
        self.application = application

    def __call__(self, environ, start_response):
        def omitting(status, headers, exc_info=None):
            omitted = environ.get(errors.OMIT_HEADERS_ENVIRON, ())
            return start_response(status, [
                (name, value) for name, value in headers
                if name.lower() not in omitted], exc_info)
        return self.application(environ, omitting)


class FaultWrapper:
    """Any exception that escaped the middleware below becomes a JSON error."""

    def __init__(self, application):
        self.application = application

    def __call__(self, environ, start_response):
        try:
            return self.application(environ, start_response)
        except Exception as exc:  # noqa: the last line of defence
            error = unexpected_error(exc, environ)
            content_type, text = errors.render(error.status, error.detail,
                                               environ)
            body = text.encode()
            start_response('%d %s' % (error.status,
                                      http.HTTPStatus(error.status).phrase), [
                ('Content-Type', content_type),
                ('Content-Length', str(len(body)))])
            return [body]


def _tunnel_path_as_latin1(environ):
    """Give PATH_INFO the PEP 3333 form falcon decodes (UTF-8 bytes
    tunnelled as latin-1) when a server or test client passed it already
    decoded: a path such as ``/\u2603`` must be a 404, not a 500."""
    path = environ.get('PATH_INFO', '')
    try:
        path.encode('latin-1')
    except UnicodeEncodeError:
        environ['PATH_INFO'] = path.encode('utf-8').decode('latin-1')


@functools.cache
def _declared_methods(resource_class):
    """HTTP methods of a resource class, in the order its responders are
    defined."""
    methods = []
    for klass in reversed(resource_class.__mro__):
        for name in vars(klass):
            if name.startswith('on_') and name[3:].upper() not in methods:
                methods.append(name[3:].upper())
    return methods


class _PlacementRequest(falcon.Request):
    """A falcon request that knows its placement context."""

    def __init__(self, env, options=None):
        _tunnel_path_as_latin1(env)
        super().__init__(env, options)

    @property
    def placement(self):
        return self.env['placement.context']


class _PathGuard:
    """Paths no route has, before routing.

    ``//resource_providers`` is not ``/resource_providers`` (falcon would
    route it there; the reference answers 404), nor is a path that holds an
    empty field (``/resource_providers/``) or a NUL character: no name or
    uuid in the database holds one (PostgreSQL cannot store it), so reading
    or deleting it finds nothing, and writing it is refused before any SQL.
    A NUL in the query string is refused too.
    """

    def process_request(self, req, resp):
        if '//' in req.path:
            raise errors.NotFound('', answered_by=errors.DISPATCHER)
        if '\x00' in req.path:
            if req.method in ('GET', 'HEAD', 'DELETE'):
                raise errors.NotFound('')
            raise errors.BadRequest(
                'The NUL character is not allowed in the path.')
        if '%00' in req.query_string or '\x00' in req.query_string:
            raise errors.BadRequest(
                'Invalid query string parameters: the NUL character is not '
                'allowed.')


class _MethodGuard:
    """405 for a method the resource does not declare (falcon would answer
    OPTIONS and HEAD itself), with ``Allow`` in declaration order.

    An empty path field (``/resource_providers/``) matches no route in the
    reference: 404 here too."""

    def process_resource(self, req, resp, resource, params):
        if resource is None:
            return
        if '' in params.values():
            raise errors.NotFound('', answered_by=errors.DISPATCHER)
        methods = _declared_methods(type(resource))
        if req.method not in methods:
            raise errors.MethodNotAllowed(
                'The method specified is not allowed for this resource.',
                headers={'allow': ', '.join(methods)})


class _BodyGuard:
    """The reference refuses a body that comes without a content type
    before it looks for a route; a body announced larger than
    ``max_body_size`` is refused unread (413), a chunked body that could
    not be read (see request_body) with 400."""

    def __init__(self, max_body_size):
        self.max_body_size = max_body_size

    def process_request(self, req, resp):
        req.env[errors.MAX_BODY_ENVIRON] = self.max_body_size
        if errors.BODY_ERROR_ENVIRON in req.env:
            raise errors.BadRequest(req.env[errors.BODY_ERROR_ENVIRON],
                                    answered_by=errors.DISPATCHER)
        length = req.get_header('content-length')
        if not length:
            return
        try:
            length = int(length)
        except ValueError:
            raise errors.BadRequest('content-length header must be an integer',
                                    answered_by=errors.DISPATCHER)
        if length > self.max_body_size:
            raise errors.RequestTooLarge(self.max_body_size)
        if length > 0 and not req.content_type:
            raise errors.BadRequest(
                'content-type header required when content-length > 0',
                answered_by=errors.DISPATCHER)


def _render_placement_error(req, resp, exc, params):
    req.env[errors.OMIT_HEADERS_ENVIRON] = errors.OMITTED_HEADERS[
        exc.answered_by]
    req.env[metrics.ERROR_CODE] = exc.code
    resp.status = exc.status
    for name, value in exc.headers.items():
        resp.set_header(name, value)
    resp.content_type, resp.text = errors.render(exc.status, exc.detail,
                                                 req.env, code=exc.code)


def _render_falcon_error(req, resp, exc, params):
    """Falcon's own errors (unknown route, for example) in our format."""
    error = errors.PlacementError('', answered_by=errors.DISPATCHER)
    error.status = int(str(exc.status).split()[0])
    _render_placement_error(req, resp, error, params)


def _render_unexpected_error(req, resp, exc, params):
    _render_placement_error(req, resp, unexpected_error(exc, req.env),
                            params)


def build_falcon_app(enable_extensions=True,
                     max_body_size=config.DEFAULT_MAX_BODY_SIZE):
    app = falcon.App(request_type=_PlacementRequest,
                     middleware=[_BodyGuard(max_body_size), _PathGuard(),
                                 _MethodGuard()])
    app.req_options.keep_blank_qs_values = True
    app.req_options.strip_url_path_trailing_slash = False
    # Responses say their content type themselves: an empty 201 (such as a
    # provider created before 1.20) has none, as in the reference.
    app.resp_options.default_media_type = None
    for path, resource in routes.served(enable_extensions):
        app.add_route(path, resource())
    app.add_error_handler(Exception, _render_unexpected_error)
    app.add_error_handler(falcon.HTTPError, _render_falcon_error)
    app.add_error_handler(errors.PlacementError, _render_placement_error)
    return app


def _prepare_database(conf, db):
    """The schema (with ``sync_on_startup``) and the standard names."""
    if conf.placement_database.sync_on_startup:
        # Imported here: alembic costs each worker 8 MB it never uses
        # otherwise.
        from placement_lite.db import migrate
        migrate.upgrade(db)
    standard_names.ensure_synced(db)


def tune_garbage_collector():
    """The collector's settings for a process that serves requests, once
    the application is built."""
    # What was built at start-up lives as long as the process: moving it
    # out of the collector's sight keeps full collections from walking it
    # again and again.
    gc.freeze()
    # A large candidates answer builds a few hundred thousand small
    # containers, nearly all alive until the response is written, and
    # nearly none in a reference cycle. With the default thresholds (700,
    # 10, 10) the collector walks them over and over while the request
    # runs, about a fifth of its time; a request leaves nothing in a
    # reference cycle, so collecting every 1,000,000 allocations finds the
    # same garbage. (At 200,000, the unbounded answers of 20,000 hosts,
    # 18,000 to 24,000 candidates, still ran 23 passes in 14 requests,
    # 442 ms: 4.5 to 7% of their time; at 100,000, one of 21,600
    # candidates ran a pass in every request.)
    gc.set_threshold(1_000_000, 20, 20)


def build_app(conf, db=None):
    """The whole WSGI application for ``conf``; ``db`` defaults to the configured one.

    Start-up work is safe when many processes and hosts do it at once, and
    leaves no connection open: a server that forks its workers after
    building the application gives each of them empty pools.
    """
    # A bad rank key stops the service here, not each request.
    engine.rank_query.server_order(conf.placement.allocation_candidates_rank_by)
    db = db or db_api.from_conf(conf)
    db_api.retry_while_unavailable(db, conf.placement_database,
                                   lambda: _prepare_database(conf, db))
    if conf.placement.warm_caches_on_start:
        with cloud_shared.built_once(db.replica_engine):
            candidates_answer.render_ahead(engine.warm_caches(
                db, conf.placement.allocation_candidates_rank_by))
    db.dispose()
    enforcer = policy.Enforcer(conf)

    versions = microversion.versions(conf.api.enable_extensions)
    application = FaultWrapper(build_falcon_app(
        conf.api.enable_extensions, conf.api.max_request_body_size))
    application = Microversion(
        application, versions, microversion_middleware.MicroversionMiddleware(
            application, microversion.SERVICE_TYPE, versions,
            json_error_formatter=errors.webob_json_formatter(
                versions[0], versions[-1])))
    application = OmitHeaders(application)
    application = ContextMiddleware(application, conf, db, enforcer)
    if conf.api.auth_strategy == 'noauth2':
        application = NoAuth(application)
    else:
        application = KeystoneAuth(application, conf)
    if conf.cors.allowed_origin:
        application = cors.CORS.factory({}, **conf.cors)(application)
    application = AcceptJson(application)
    # Left out unless asked for: it would only find out on every request
    # that it has nothing to do.
    if conf.oslo_middleware.enable_proxy_headers_parsing:
        application = http_proxy_to_wsgi.HTTPProxyToWSGI(application, conf)
    application = metrics.wrap(requestlog.RequestLog(application, conf),
                               conf, db,
                               routes.served(conf.api.enable_extensions))
    return Healthcheck(request_body.RequestBody(
        RequestId(application), conf.api.max_request_body_size), conf)

