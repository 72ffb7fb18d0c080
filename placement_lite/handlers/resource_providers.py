"""/resource_providers and /resource_providers/{uuid}."""

import json
import uuid as uuidlib

from placement_lite import microversion
from placement_lite import querystring
from placement_lite.domain import providers
from placement_lite.handlers import bodies
from placement_lite.handlers import dates
from placement_lite.handlers import query
from placement_lite.handlers import responses
from placement_lite.schemas import resource_providers as schemas

#: (link relation, microversion it appears at), in the reference's order.
_LINKS = [('inventories', microversion.MINIMUM),
          ('usages', microversion.MINIMUM),
          ('aggregates', microversion.PROVIDER_AGGREGATES),
          ('traits', microversion.TRAITS),
          ('allocations', microversion.PROVIDER_ALLOCATIONS_LINK)]


def provider_path(req, uuid):
    return '%s/resource_providers/%s' % (req.root_path, uuid)


def provider_json(req):
    """A function of (uuid, name, generation, parent uuid, root uuid)
    giving a provider's JSON document at the request's microversion, as
    the text ``json.dumps`` gives for it, byte for byte.

    The text is assembled from pieces worked out once per request: a
    listing of thousands of providers would otherwise spend most of its
    time building and encoding a dict and six link dicts per provider.
    Only the name needs encoding; uuids are hexadecimal and hyphens.
    """
    encode = json.encoder.encode_basestring_ascii
    version = microversion.of(req)
    relations = [rel for rel, since in _LINKS if version >= since]
    prefix = encode(provider_path(req, ''))[1:-1]
    # The links, cut where each path goes: path.join(links) writes them.
    links = ['"links": [{"rel": "self", "href": "']
    after_path = ''
    for rel in relations:
        links.append(after_path + '"}, {"rel": "%s", "href": "' % rel)
        after_path = '/' + rel
    links.append(after_path + '"}]')
    with_tree = version >= microversion.NESTED_PROVIDERS
    head = '{"uuid": "%s", "name": %s, "generation": %d, '
    tree = ', "parent_provider_uuid": %s, "root_provider_uuid": "%s"}'

    def render(uuid, name, generation, parent_uuid, root_uuid):
        text = (head % (uuid, encode(name), generation)
                + (prefix + uuid).join(links))
        if not with_tree:
            return text + '}'
        return text + tree % (
            'null' if parent_uuid is None else '"%s"' % parent_uuid,
            root_uuid)

    return render


def _render_provider(req, resp, provider):
    responses.render_json_bytes(resp, provider_json(req)(
        provider.uuid, provider.name, provider.generation,
        provider.parent_provider_uuid, provider.root_provider_uuid
    ).encode())


def _modified(provider):
    return provider.updated_at or provider.created_at


def _list_filters(req):
    """ProviderFilters from the query string, validated per microversion."""
    query.validate(req, microversion.schema_for(microversion.of(req),
                                                schemas.LIST_QUERY))
    given = query.last_values(req)
    filters = providers.ProviderFilters(
        name=given.get('name'), uuid=given.get('uuid'),
        in_tree=given.get('in_tree'))
    if 'member_of' in given:
        filters.member_of, filters.forbidden_aggregates = query.member_of(req)
    if 'required' in given:
        filters.required_traits, filters.forbidden_traits = (
            query.required_traits(req))
    if 'resources' in given:
        filters.resources = querystring.resources(given['resources'])
    return filters


class ResourceProviders:
    def on_get(self, req, resp):
        responses.require_json_accept(req)
        req.placement.can('placement:resource_providers:list')
        found = providers.list_providers(req.placement.db, _list_filters(req))
        render = provider_json(req)
        shown = ', '.join([
            render(uuid, name, generation, parent_uuid, root_uuid)
            for uuid, name, generation, parent_uuid, root_uuid, _created,
            _updated in found])
        responses.render_json_bytes(
            resp, ('{"resource_providers": [%s]}' % shown).encode())
        dates.set_last_modified(req, resp, max(
            (updated or created for *_shown, created, updated in found),
            default=None))

    def on_post(self, req, resp):
        responses.require_json_content(req)
        req.placement.can('placement:resource_providers:create')
        version = microversion.of(req)
        data = bodies.json_body(req, microversion.schema_for(version,
                                                           schemas.CREATE))
        uuid = str(uuidlib.UUID(data['uuid'])) if data.get('uuid') else str(
            uuidlib.uuid4())
        provider = providers.create_provider(
            req.placement.db, uuid, data['name'],
            data.get('parent_provider_uuid'))
        resp.set_header('location', responses.location(req, provider_path(
            req, provider.uuid)))
        if version >= microversion.CREATED_PROVIDER_BODY:
            _render_provider(req, resp, provider)
            dates.set_last_modified(req, resp, None)
        else:
            resp.status = 201
            resp.content_type = None


class ResourceProvider:
    def on_get(self, req, resp, uuid):
        responses.require_json_accept(req)
        req.placement.can('placement:resource_providers:show')
        provider = providers.get_provider(req.placement.db, uuid)
        _render_provider(req, resp, provider)
        dates.set_last_modified(req, resp, _modified(provider))

    def on_delete(self, req, resp, uuid):
        req.placement.can('placement:resource_providers:delete')
        providers.delete_provider(req.placement.db, uuid)
        responses.no_content(resp)

    def on_put(self, req, resp, uuid):
        responses.require_json_content(req)
        req.placement.can('placement:resource_providers:update')
        version = microversion.of(req)
        with bodies.provider_found_first(req, uuid):
            data = bodies.json_body(req, microversion.schema_for(
                version, schemas.UPDATE))
        provider, before = providers.update_provider(
            req.placement.db, uuid, data['name'],
            data.get('parent_provider_uuid', providers.KEEP_PARENT),
            allow_reparenting=version >= microversion.REPARENTING)
        _render_provider(req, resp, provider)
        if version >= microversion.LAST_MODIFIED:
            # The reference reports when the provider was last changed
            # before this update, and nothing if it never was.
            if before.updated_at is not None:
                resp.set_header('last-modified', dates.http_date(
                    before.updated_at))
            resp.set_header('cache-control', 'no-cache')
