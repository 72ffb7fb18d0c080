"""Allocations of consumers:

    GET|PUT|DELETE /allocations/{consumer_uuid}
    POST           /allocations                       (1.13)
    GET            /resource_providers/{uuid}/allocations
"""

import uuid as uuidlib

from placement_lite import errors
from placement_lite import microversion
from placement_lite.domain import allocations
from placement_lite.domain import consumers
from placement_lite.handlers import bodies
from placement_lite.handlers import dates
from placement_lite.handlers import responses
from placement_lite.handlers import validation
from placement_lite.schemas import allocations as schemas


def canonical_uuid(value):
    """The canonical form of a uuid written any way Python's uuid accepts
    (hyphens or not, braces, ``urn:uuid:``, any case), or None."""
    try:
        parsed = uuidlib.UUID(value)
    except (TypeError, ValueError):
        return None
    bare = (value.replace('urn:', '').replace('uuid:', '').strip('{}')
            .replace('-', '').lower())
    return str(parsed) if parsed.hex == bare else None


def consumer_claim(req, consumer_uuid, data):
    """A ConsumerClaim from one consumer's body at this microversion."""
    version = microversion.of(req)
    entries = data['allocations']
    if version < microversion.ALLOCATIONS_BY_PROVIDER:
        entries = {entry['resource_provider']['uuid']:
                   {'resources': entry['resources']} for entry in entries}
    claim = consumers.ConsumerClaim(
        uuid=consumer_uuid,
        allocations={provider: entry['resources']
                     for provider, entry in entries.items()},
        project_id=data.get('project_id'),
        user_id=data.get('user_id'))
    if version >= microversion.CONSUMER_GENERATIONS:
        claim.generation = data['consumer_generation']
    if version >= microversion.CONSUMER_TYPES:
        claim.consumer_type = data['consumer_type']
    return claim


def _last_modified(rows):
    return dates.newest(*(row.updated_at or row.created_at for row in rows))


class ConsumerAllocations:
    """/allocations/{consumer_uuid}"""

    def on_get(self, req, resp, consumer_uuid):
        responses.require_json_accept(req)
        req.placement.can('placement:allocations:list')
        found = allocations.allocations_of_consumer(req.placement,
                                                    consumer_uuid)
        by_provider = {}
        for row in found.allocations:
            entry = by_provider.setdefault(row.provider_uuid, {'resources': {}})
            entry['resources'][row.resource_class] = row.used
            entry['generation'] = row.provider_generation
        body = {'allocations': by_provider}
        consumer = found.consumer
        version = microversion.of(req)
        if (consumer is not None
                and version >= microversion.ALLOCATIONS_BY_PROVIDER):
            body['project_id'] = consumer.project_external_id
            body['user_id'] = consumer.user_external_id
            if version >= microversion.CONSUMER_GENERATIONS:
                body['consumer_generation'] = consumer.generation
            if version >= microversion.CONSUMER_TYPES:
                body['consumer_type'] = consumer.consumer_type or 'unknown'
        responses.render(resp, body)
        dates.set_last_modified(req, resp, _last_modified(found.allocations))

    def on_put(self, req, resp, consumer_uuid):
        responses.require_json_content(req)
        req.placement.can('placement:allocations:update')
        canonical = canonical_uuid(consumer_uuid)
        if canonical is None:
            raise errors.BadRequest('Malformed consumer_uuid: %s'
                                    % consumer_uuid)
        data = bodies.json_body(req, microversion.schema_for(
            microversion.of(req), schemas.PUT_SCHEMAS))
        validation.refuse_amounts_beyond_column(data)
        allocations.set_allocations(
            req.placement, [consumer_claim(req, canonical, data)],
            allocations.put_wording(canonical))
        responses.no_content(resp)

    def on_delete(self, req, resp, consumer_uuid):
        req.placement.can('placement:allocations:delete')
        allocations.delete_allocations(req.placement, consumer_uuid)
        responses.no_content(resp)


class AllocationsByConsumer:
    """/allocations: several consumers' allocations in one atomic write."""

    def on_post(self, req, resp):
        responses.require_version(req, microversion.POST_ALLOCATIONS)
        responses.require_json_content(req)
        req.placement.can('placement:allocations:manage')
        data = bodies.json_body(req, microversion.schema_for(
            microversion.of(req), schemas.POST_SCHEMAS))
        validation.refuse_amounts_beyond_column(data)
        allocations.set_allocations(
            req.placement,
            [consumer_claim(req, uuid, body) for uuid, body in data.items()],
            allocations.POST_WORDING)
        responses.no_content(resp)


class ProviderAllocations:
    """/resource_providers/{uuid}/allocations"""

    def on_get(self, req, resp, uuid):
        responses.require_json_accept(req)
        req.placement.can('placement:resource_providers:allocations:list')
        generation, rows = allocations.allocations_on_provider(
            req.placement, uuid)
        with_generation = (microversion.of(req)
                           >= microversion.CONSUMER_GENERATIONS)
        by_consumer = {}
        for row in rows:
            entry = by_consumer.setdefault(row.consumer_uuid, {'resources': {}})
            entry['resources'][row.resource_class] = row.used
            if with_generation:
                entry['consumer_generation'] = row.consumer_generation
        responses.render(resp, {'allocations': by_consumer,
                           'resource_provider_generation': generation})
        dates.set_last_modified(req, resp, _last_modified(rows))
