"""/resource_providers/{uuid}/traits (from 1.6)."""

from placement_lite import microversion
from placement_lite.domain import provider_traits
from placement_lite.handlers import bodies
from placement_lite.handlers import dates
from placement_lite.handlers import responses
from placement_lite.schemas import provider_traits as schemas


def _render(req, resp, traits, generation):
    responses.render(resp, {'traits': [trait.name for trait in traits],
                       'resource_provider_generation': generation})
    moments = [trait.updated_at or trait.created_at for trait in traits]
    # A trait without timestamps counts as changed now, as in the reference.
    dates.set_last_modified(
        req, resp, None if None in moments else dates.newest(*moments))


class ProviderTraits:
    def on_get(self, req, resp, uuid):
        responses.require_version(req, microversion.TRAITS)
        responses.require_json_accept(req)
        req.placement.can('placement:resource_providers:traits:list')
        generation, traits = provider_traits.get_traits(req.placement.db,
                                                        uuid)
        _render(req, resp, traits, generation)

    def on_put(self, req, resp, uuid):
        responses.require_version(req, microversion.TRAITS)
        responses.require_json_content(req)
        req.placement.can('placement:resource_providers:traits:update')
        data = bodies.json_body(req, schemas.SET_TRAITS)
        traits, generation = provider_traits.set_traits(
            req.placement.db, uuid, data['traits'],
            data['resource_provider_generation'])
        _render(req, resp, traits, generation)

    def on_delete(self, req, resp, uuid):
        responses.require_version(req, microversion.TRAITS)
        req.placement.can('placement:resource_providers:traits:delete')
        provider_traits.clear_traits(req.placement.db, uuid)
        responses.no_content(resp)
