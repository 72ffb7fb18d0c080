"""Logging as OpenStack services log: oslo.log configured from
placement.conf (``[DEFAULT] debug``, ``log_file``, ``log_dir``,
``use_json``...), and one line per request.

A request's line says who asked what and how it went::

    127.0.0.1 "GET /allocation_candidates?resources=VCPU:1" status: 200
    len: 5120 microversion: 1.39 time: 12.3 ms candidates: 8 trees: 8

and, through oslo.log's context format, carries the request id and the
global request id, as every other line logged while the request runs.
"""

import logging
import time

from oslo_context import context as oslo_context
from oslo_log import log as oslo_log
from oslo_middleware import request_id

LOG = logging.getLogger(__name__)

#: Where the allocation candidates handler leaves (candidates returned,
#: trees searched).
CANDIDATES = 'placement_lite.candidates'
_CANDIDATES_PATH = '/allocation_candidates'


def setup(conf):
    """Configure logging from ``conf`` (its oslo.log options)."""
    oslo_log.setup(conf, 'placement_lite')


def _uri(environ):
    path = environ.get('SCRIPT_NAME', '') + environ.get('PATH_INFO', '')
    query = environ.get('QUERY_STRING')
    return path + '?' + query if query else path


class RequestLog:
    """Log each request once it is answered; a candidates request slower
    than ``[api] log_slow_candidates_after`` also at WARNING."""

    def __init__(self, application, conf):
        self.application = application
        self.slow_after = conf.api.log_slow_candidates_after

    def __call__(self, environ, start_response):
        started = time.monotonic()
        # The thread's current context until auth builds the full one: so
        # a line logged before then carries this request's ids, never the
        # previous request's.
        oslo_context.RequestContext(
            request_id=environ.get(request_id.ENV_REQUEST_ID),
            global_request_id=environ.get(request_id.GLOBAL_REQ_ID))
        answer = {}

        def recording_start_response(status, headers, exc_info=None):
            answer['status'] = status.split(' ', 1)[0]
            answer['headers'] = dict((name.lower(), value)
                                     for name, value in headers)
            return start_response(status, headers, exc_info)

        body = self.application(environ, recording_start_response)
        self._log(environ, answer, time.monotonic() - started)
        return body

    def _log(self, environ, answer, seconds):
        headers = answer.get('headers', {})
        version = headers.get('openstack-api-version', '-').split(' ')[-1]
        line = '%s "%s %s" status: %s len: %s microversion: %s time: %.1f ms' % (
            environ.get('REMOTE_ADDR', '-'), environ.get('REQUEST_METHOD'),
            _uri(environ), answer.get('status', '-'),
            headers.get('content-length', '-'), version, seconds * 1000)
        if CANDIDATES in environ:
            line += ' candidates: %d trees: %d' % environ[CANDIDATES]
        LOG.info(line)
        if (environ.get('PATH_INFO') == _CANDIDATES_PATH
                and 0 < self.slow_after < seconds):
            LOG.warning('Slow allocation candidates request (%.0f ms): %s',
                        seconds * 1000, _uri(environ))
