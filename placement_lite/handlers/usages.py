"""Usages:

    GET /resource_providers/{uuid}/usages
    GET /usages?project_id=&user_id=      (1.9; consumer_type from 1.38)
"""

from placement_lite import microversion
from placement_lite.domain import usages
from placement_lite.handlers import dates
from placement_lite.handlers import query
from placement_lite.handlers import responses
from placement_lite.schemas import usages as schemas


class ProviderUsages:
    """/resource_providers/{uuid}/usages"""

    def on_get(self, req, resp, uuid):
        responses.require_json_accept(req)
        req.placement.can('placement:resource_providers:usages')
        generation, used = usages.provider_usages(req.placement, uuid)
        responses.render(resp, {'resource_provider_generation': generation,
                           'usages': used})
        # Usage is "now": the last-modified time is the time of the answer.
        dates.set_last_modified(req, resp, None)


class TotalUsages:
    """/usages"""

    def on_get(self, req, resp):
        responses.require_version(req, microversion.PROJECT_USAGES)
        responses.require_json_accept(req)
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
        responses.render(resp, {'usages': body})
        dates.set_last_modified(req, resp, None)
