"""/resource_providers/{uuid}/aggregates (from 1.1)."""

from placement_lite import microversion
from placement_lite.domain import provider_aggregates
from placement_lite.handlers import bodies
from placement_lite.handlers import dates
from placement_lite.handlers import responses
from placement_lite.schemas import aggregates as schemas


def _render(req, resp, aggregate_uuids, generation):
    document = {'aggregates': aggregate_uuids}
    if microversion.of(req) >= microversion.AGGREGATES_GENERATION:
        document['resource_provider_generation'] = generation
    responses.render(resp, document)
    # Memberships carry no timestamps: the reference says "now".
    dates.set_last_modified(req, resp, None)


class ProviderAggregates:
    def on_get(self, req, resp, uuid):
        responses.require_json_accept(req)
        responses.require_version(req, microversion.PROVIDER_AGGREGATES)
        req.placement.can('placement:resource_providers:aggregates:list')
        generation, aggregate_uuids = provider_aggregates.get_aggregates(
            req.placement.db, uuid)
        _render(req, resp, aggregate_uuids, generation)

    def on_put(self, req, resp, uuid):
        responses.require_json_content(req)
        responses.require_version(req, microversion.PROVIDER_AGGREGATES)
        req.placement.can('placement:resource_providers:aggregates:update')
        version = microversion.of(req)
        with bodies.provider_found_first(req, uuid):
            data = bodies.json_body(req, microversion.schema_for(
                version, schemas.SET_AGGREGATES))
        if version >= microversion.AGGREGATES_GENERATION:
            aggregate_uuids = data['aggregates']
            generation = data['resource_provider_generation']
        else:
            aggregate_uuids = data
            generation = None
        generation = provider_aggregates.set_aggregates(
            req.placement.db, uuid, aggregate_uuids, generation)
        _render(req, resp, aggregate_uuids, generation)
