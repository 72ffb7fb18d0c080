"""POST /allocation_claims (1.43, placement_lite's extension): allocate
the best candidate of a candidates query to consumers, in one
transaction (domain/claims.py, api-ref/extensions.md)."""

from placement_lite import errors
from placement_lite import microversion
from placement_lite.domain import claims
from placement_lite.domain import consumers
from placement_lite.handlers import allocation_candidates
from placement_lite.handlers import allocations
from placement_lite.handlers import bodies
from placement_lite.handlers import responses
from placement_lite.schemas import allocation_claims as schema


def _consumer_claims(data):
    """A consumers.ConsumerClaim, without allocations, per consumer of the
    body, in its order; 400 for a malformed or repeated uuid."""
    found = {}
    for written, consumer in data['consumers'].items():
        uuid = allocations.canonical_uuid(written)
        if uuid is None:
            raise errors.BadRequest('Malformed consumer uuid: %s' % written)
        if uuid in found:
            raise errors.BadRequest('Consumer %s is named twice.' % uuid)
        found[uuid] = consumers.ConsumerClaim(
            uuid=uuid, allocations={}, project_id=consumer['project_id'],
            user_id=consumer['user_id'],
            generation=consumer['consumer_generation'],
            consumer_type=consumer['consumer_type'])
    return list(found.values())


class AllocationClaims:
    """/allocation_claims"""

    def on_post(self, req, resp):
        responses.require_version(req, microversion.CLAIMS)
        responses.require_json_accept(req)
        req.placement.can('placement_lite:allocation_claims:create')
        request = allocation_candidates.candidate_request(req, schema.QUERY)
        data = bodies.json_body(req, microversion.schema_for(
            microversion.of(req), schema.BODY))
        claimed = claims.claim(req.placement, request,
                               _consumer_claims(data),
                               data.get('trees', claims.ANY))
        responses.render(resp, {
            'claims': {one.consumer_uuid: {
                'allocations': {uuid: {'resources': resources}
                                for uuid, resources
                                in one.allocations.items()},
                'mappings': one.mappings,
                'consumer_generation': one.generation,
            } for one in claimed.claimed},
            'refused': claimed.refused})
