"""GET / : the version document."""

import functools
import json

from placement_lite import microversion
from placement_lite.handlers import dates
from placement_lite.handlers import responses


@functools.cache
def _document(enable_extensions):
    """The version document's JSON: the same for every request."""
    versions = microversion.versions(enable_extensions)
    return json.dumps({'versions': [{
        'id': 'v%s' % versions[0],
        'max_version': versions[-1],
        'min_version': versions[0],
        'status': 'CURRENT',
        'links': [{'rel': 'self', 'href': ''}],
    }]}).encode()


class Root:
    def on_get(self, req, resp):
        responses.render_json_bytes(resp, _document(
            req.placement.conf.api.enable_extensions))
        dates.set_last_modified(req, resp, None)
