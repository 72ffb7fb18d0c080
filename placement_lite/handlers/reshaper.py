"""POST /reshaper (1.30): inventories and allocations replaced atomically."""

from placement_lite import errors
from placement_lite import microversion
from placement_lite.domain import inventories
from placement_lite.domain import reshaper
from placement_lite.handlers import allocations
from placement_lite.handlers import bodies
from placement_lite.handlers import responses
from placement_lite.handlers import validation
from placement_lite.schemas import reshaper as schemas


def _inventories(uuid, fields_by_class):
    wanted = []
    for resource_class, fields in fields_by_class.items():
        try:
            wanted.append(inventories.Inventory(resource_class, **fields))
        except TypeError as exc:
            raise errors.BadRequest(
                'Bad inventory %s for resource provider %s: %s'
                % (resource_class, uuid, exc))
    return wanted


class Reshaper:
    def on_post(self, req, resp):
        responses.require_version(req, microversion.RESHAPER)
        responses.require_json_content(req)
        req.placement.can('placement:reshaper:reshape')
        data = bodies.json_body(req, microversion.schema_for(
            microversion.of(req), schemas.SCHEMAS))
        validation.refuse_amounts_beyond_column(data)
        wanted = {
            uuid: reshaper.ProviderInventories(
                body['resource_provider_generation'],
                _inventories(uuid, body['inventories']))
            for uuid, body in data['inventories'].items()}
        claims = [allocations.consumer_claim(req, uuid, body)
                  for uuid, body in data['allocations'].items()]
        reshaper.reshape(req.placement, wanted, claims)
        responses.no_content(resp)
