"""/resource_providers and /resource_providers/{uuid}."""

import uuid as uuidlib

from placement_lite import microversion
from placement_lite import querystring
from placement_lite.domain import providers
from placement_lite.handlers import query
from placement_lite.handlers import util
from placement_lite.schemas import resource_providers as schemas

#: (link relation, microversion it appears at), in the reference's order.
_LINKS = [('inventories', '1.0'), ('usages', '1.0'), ('aggregates', '1.1'),
          ('traits', '1.6'), ('allocations', '1.11')]


def provider_path(req, uuid):
    return '%s/resource_providers/%s' % (req.root_path, uuid)


def provider_renderer(req):
    """A function giving the JSON document of a provider at the request's
    microversion. What depends only on the microversion is worked out once,
    not once per provider of a listing."""
    relations = [rel for rel, version in _LINKS
                 if microversion.at_least(req, version)]
    with_tree = microversion.at_least(req, '1.14')
    prefix = provider_path(req, '')

    def render(provider):
        path = prefix + provider.uuid
        links = [{'rel': 'self', 'href': path}]
        links.extend({'rel': rel, 'href': path + '/' + rel}
                     for rel in relations)
        document = {
            'uuid': provider.uuid,
            'name': provider.name,
            'generation': provider.generation,
            'links': links,
        }
        if with_tree:
            document['parent_provider_uuid'] = provider.parent_provider_uuid
            document['root_provider_uuid'] = provider.root_provider_uuid
        return document

    return render


def render_provider(req, provider):
    """The JSON document of one provider at the request's microversion."""
    return provider_renderer(req)(provider)


def _modified(provider):
    return provider.updated_at or provider.created_at


def _list_filters(req):
    """ProviderFilters from the query string, validated per microversion."""
    for version, schema in schemas.LIST_QUERY:
        if microversion.of(req).matches(version):
            query.validate(req, schema)
            break
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
        util.require_json_accept(req)
        req.placement.can('placement:resource_providers:list')
        found = providers.list_providers(req.placement.db, _list_filters(req))
        render = provider_renderer(req)
        util.render(resp, {'resource_providers': [
            render(provider) for provider in found]})
        util.set_last_modified(
            req, resp, util.newest(*[_modified(p) for p in found]))

    def on_post(self, req, resp):
        util.require_json_content(req)
        req.placement.can('placement:resource_providers:create')
        schema = (schemas.CREATE_1_14 if microversion.at_least(req, '1.14')
                  else schemas.CREATE)
        data = util.json_body(req, schema)
        uuid = str(uuidlib.UUID(data['uuid'])) if data.get('uuid') else str(
            uuidlib.uuid4())
        provider = providers.create_provider(
            req.placement.db, uuid, data['name'],
            data.get('parent_provider_uuid'))
        resp.set_header('location', util.location(req, provider_path(
            req, provider.uuid)))
        if microversion.at_least(req, '1.20'):
            util.render(resp, render_provider(req, provider))
            util.set_last_modified(req, resp, None)
        else:
            resp.status = 201
            resp.content_type = None


class ResourceProvider:
    def on_get(self, req, resp, uuid):
        util.require_json_accept(req)
        req.placement.can('placement:resource_providers:show')
        provider = providers.get_provider(req.placement.db, uuid)
        util.render(resp, render_provider(req, provider))
        util.set_last_modified(req, resp, _modified(provider))

    def on_delete(self, req, resp, uuid):
        req.placement.can('placement:resource_providers:delete')
        providers.delete_provider(req.placement.db, uuid)
        util.no_content(resp)

    def on_put(self, req, resp, uuid):
        util.require_json_content(req)
        req.placement.can('placement:resource_providers:update')
        # The reference answers 404 for an unknown provider before it
        # looks at the body.
        providers.get_provider(req.placement.db, uuid)
        with_parent = microversion.at_least(req, '1.14')
        data = util.json_body(
            req, schemas.UPDATE_1_14 if with_parent else schemas.UPDATE)
        provider, before = providers.update_provider(
            req.placement.db, uuid, data['name'],
            data.get('parent_provider_uuid', providers.KEEP_PARENT),
            allow_reparenting=microversion.at_least(req, '1.37'))
        util.render(resp, render_provider(req, provider))
        if microversion.at_least(req, '1.15'):
            # The reference reports when the provider was last changed
            # before this update, and nothing if it never was.
            if before.updated_at is not None:
                resp.set_header('last-modified', util.http_date(
                    before.updated_at))
            resp.set_header('cache-control', 'no-cache')


ROUTES = [
    ('/resource_providers', ResourceProviders()),
    ('/resource_providers/{uuid}', ResourceProvider()),
]
