"""A small HTTP client for the plugin's commands, on the keystoneauth session."""

import json

from keystoneauth1 import exceptions as ks_exceptions
from osc_lib import exceptions


class Client:
    def __init__(self, session, endpoint_filter, api_version):
        """``api_version``: the microversion the user asked for, or None
        (each command then uses the one it needs)."""
        self.session = session
        self.endpoint_filter = endpoint_filter
        self.api_version = api_version

    def request(self, method, url, microversion, **kwargs):
        """The response at the user's microversion, or else at
        ``microversion``; a 4xx becomes the osc_lib error of that status,
        carrying the server's own message."""
        headers = {'OpenStack-API-Version': 'placement %s' % (
                       self.api_version or microversion),
                   'Accept': 'application/json'}
        try:
            return self.session.request(url, method, headers=headers,
                                        endpoint_filter=self.endpoint_filter,
                                        **kwargs)
        except ks_exceptions.HttpError as exc:
            if not 400 <= exc.http_status < 500:
                raise
            raise _client_error(exc) from exc


def _client_error(exc):
    try:
        detail = json.loads(exc.response.content)['errors'][0]['detail']
        # The message follows the status explanation, when there is one.
        message = (detail.split('\n\n', 1)[-1].strip()
                   or detail.split('\n\n', 1)[0].strip())
    except (ValueError, KeyError, IndexError, TypeError):
        message = str(exc)
    for klass in exceptions.ClientException.__subclasses__():
        if klass.http_status == exc.http_status:
            return klass(exc.http_status, message)
    return exceptions.CommandError(message)
