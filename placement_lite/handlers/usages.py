"""Usages:

    GET /resource_providers/{uuid}/usages
    GET /usages?project_id=&user_id=      (1.9; consumer_type from 1.38)
"""

from placement_lite import microversion
from placement_lite.domain import usages
from placement_lite.handlers import query
from placement_lite.handlers import util
from placement_lite.schemas import usages as schemas


class ProviderUsages:
    """/resource_providers/{uuid}/usages"""

    def on_get(self, req, resp, uuid):
        util.require_json_accept(req)
        req.placement.can('placement:resource_providers:usages')
        generation, used = usages.provider_usages(req.placement, uuid)
        util.render(resp, {'resource_provider_generation': generation,
                           'usages': used})
        # Usage is "now": the last-modified time is the time of the answer.
        util.set_last_modified(req, resp, None)


class TotalUsages:
    """/usages"""

    def on_get(self, req, resp):
        util.require_version(req, microversion.PROJECT_USAGES)
        util.require_json_accept(req)
        given = query.last_values(req)
        req.placement.can('placement:usages',
                          {'project_id': given.get('project_id')})
        version = microversion.of(req)
        query.validate(req, microversion.schema_for(version,
                                                    schemas.USAGES_QUERY))
        if version >= microversion.CONSUMER_TYPES:
            body = usages.project_usages_by_type(
                req.placement, given['project_id'], given.get('user_id'),
                given.get('consumer_type'))
        else:
            body = usages.project_usages(
                req.placement, given['project_id'], given.get('user_id'))
        util.render(resp, {'usages': body})
        util.set_last_modified(req, resp, None)
