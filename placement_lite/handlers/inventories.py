"""/resource_providers/{uuid}/inventories[/{resource_class}]."""

import re

from placement_lite import errors
from placement_lite import microversion
from placement_lite.domain import inventories
from placement_lite.handlers import bodies
from placement_lite.handlers import dates
from placement_lite.handlers import responses
from placement_lite.handlers import validation
from placement_lite.schemas import common
from placement_lite.schemas import inventories as schemas

_LISTED_CLASS = re.compile(common.NAME_PATTERN)


def _path(uuid, resource_class):
    return '/resource_providers/%s/inventories/%s' % (uuid, resource_class)


def _render_one(req, resp, generation, inventory, status=200):
    responses.render(resp, dict(inventory.values(),
                           resource_provider_generation=generation), status)
    dates.set_last_modified(req, resp, inventory.last_modified)


def _render_all(req, resp, generation, all_inventories):
    responses.render(resp, {
        'resource_provider_generation': generation,
        'inventories': {inventory.resource_class: inventory.values()
                        for inventory in all_inventories}})
    if all_inventories:
        dates.set_last_modified(req, resp, dates.newest(*(
            inventory.last_modified for inventory in all_inventories)))
    elif microversion.of(req) >= microversion.LAST_MODIFIED:
        # Nothing was modified: the reference sends no last-modified then.
        resp.set_header('cache-control', 'no-cache')


def _inventory(resource_class, fields):
    """An Inventory from validated request fields (the API's defaults apply)."""
    if 'resource_provider_generation' in fields:
        fields = dict(fields)
        del fields['resource_provider_generation']
    return inventories.Inventory(resource_class, **fields)


def _reserved_may_equal_total(req):
    return microversion.of(req) >= microversion.RESERVED_MAY_EQUAL_TOTAL


class Inventories:
    def on_get(self, req, resp, uuid):
        responses.require_json_accept(req)
        req.placement.can('placement:resource_providers:inventories:list')
        generation, found = inventories.get_inventories(req.placement.db, uuid)
        _render_all(req, resp, generation, found)

    def on_post(self, req, resp, uuid):
        responses.require_json_content(req)
        req.placement.can('placement:resource_providers:inventories:create')
        with bodies.provider_found_first(req, uuid):
            data = bodies.json_body(req, schemas.CREATE_ONE)
            inventory = _inventory(data.pop('resource_class'), data)
        generation = inventories.add_inventory(
            req.placement.db, uuid, inventory, _reserved_may_equal_total(req))
        resp.location = responses.location(
            req, _path(uuid, inventory.resource_class))
        _render_one(req, resp, generation, inventory, status=201)

    def on_put(self, req, resp, uuid):
        responses.require_json_content(req)
        req.placement.can('placement:resource_providers:inventories:update')
        with bodies.provider_found_first(req, uuid):
            data = bodies.json_body(req, schemas.REPLACE_ALL)
            for resource_class, fields in data['inventories'].items():
                if not _LISTED_CLASS.match(resource_class):
                    # The schema only checks entries under well-formed
                    # names; the others must still be inventories (the
                    # reference fails with a 500 on them).
                    validation.validate(fields, schemas.INVENTORY_RECORD)
            wanted = [_inventory(resource_class, fields) for resource_class,
                      fields in data['inventories'].items()]
        generation = inventories.replace_inventories(
            req.placement.db, uuid, data['resource_provider_generation'],
            wanted, _reserved_may_equal_total(req))
        _render_all(req, resp, generation, wanted)

    def on_delete(self, req, resp, uuid):
        if microversion.of(req) < microversion.DELETE_ALL_INVENTORIES:
            raise errors.MethodNotAllowed('')
        req.placement.can('placement:resource_providers:inventories:delete')
        inventories.delete_all_inventories(req.placement.db, uuid)
        responses.no_content(resp)


class Inventory:
    def on_get(self, req, resp, uuid, resource_class):
        responses.require_json_accept(req)
        req.placement.can('placement:resource_providers:inventories:show')
        generation, inventory = inventories.get_inventory(
            req.placement.db, uuid, resource_class)
        _render_one(req, resp, generation, inventory)

    def on_put(self, req, resp, uuid, resource_class):
        responses.require_json_content(req)
        req.placement.can('placement:resource_providers:inventories:update')
        with bodies.provider_found_first(req, uuid):
            data = bodies.json_body(req, schemas.UPDATE_ONE)
            inventory = _inventory(resource_class, data)
        generation = inventories.update_inventory(
            req.placement.db, uuid, data['resource_provider_generation'],
            inventory, _reserved_may_equal_total(req))
        _render_one(req, resp, generation, inventory)

    def on_delete(self, req, resp, uuid, resource_class):
        req.placement.can('placement:resource_providers:inventories:delete')
        inventories.delete_inventory(req.placement.db, uuid, resource_class)
        responses.no_content(resp)
