"""GET / : the version document."""

from placement_lite import microversion
from placement_lite.handlers import dates
from placement_lite.handlers import responses


class Root:
    def on_get(self, req, resp):
        versions = microversion.versions(req.placement.conf.api.enable_extensions)
        responses.render(resp, {'versions': [{
            'id': 'v%s' % versions[0],
            'max_version': versions[-1],
            'min_version': versions[0],
            'status': 'CURRENT',
            'links': [{'rel': 'self', 'href': ''}],
        }]})
        dates.set_last_modified(req, resp, None)
