"""/resource_classes and /resource_classes/{name} (from microversion 1.2)."""

from placement_lite import microversion
from placement_lite.domain import resource_classes
from placement_lite.handlers import bodies
from placement_lite.handlers import dates
from placement_lite.handlers import responses
from placement_lite.handlers import validation
from placement_lite.schemas import resource_classes as schemas


def _path(name):
    return '/resource_classes/%s' % name


def _render_class(req, row):
    return {'name': row.name,
            'links': [{'rel': 'self', 'href': req.root_path + _path(row.name)}]}


class ResourceClasses:
    def on_get(self, req, resp):
        responses.require_version(req, microversion.CUSTOM_RESOURCE_CLASSES)
        responses.require_json_accept(req)
        req.placement.can('placement:resource_classes:list')
        rows = resource_classes.list_resource_classes(req.placement.db)
        responses.render(resp, {'resource_classes': [_render_class(req, row)
                                                for row in rows]})
        dates.set_last_modified(req, resp, dates.newest(*(
            row.updated_at or row.created_at for row in rows)))

    def on_post(self, req, resp):
        responses.require_version(req, microversion.CUSTOM_RESOURCE_CLASSES)
        responses.require_json_content(req)
        req.placement.can('placement:resource_classes:create')
        name = bodies.json_body(req, schemas.RESOURCE_CLASS)['name']
        resource_classes.create_resource_class(req.placement.db, name)
        resp.location = responses.location(req, _path(name))
        resp.status = 201
        resp.content_type = None


class ResourceClass:
    def on_get(self, req, resp, name):
        responses.require_version(req, microversion.CUSTOM_RESOURCE_CLASSES)
        responses.require_json_accept(req)
        req.placement.can('placement:resource_classes:show')
        row = resource_classes.get_resource_class(req.placement.db, name)
        responses.render(resp, _render_class(req, row))
        dates.set_last_modified(req, resp, row.updated_at or row.created_at)

    def on_put(self, req, resp, name):
        responses.require_version(req, microversion.CUSTOM_RESOURCE_CLASSES)
        if microversion.of(req) >= microversion.RESOURCE_CLASS_PUT_CREATES:
            self._ensure(req, resp, name)
        else:
            self._rename(req, resp, name)

    def on_delete(self, req, resp, name):
        responses.require_version(req, microversion.CUSTOM_RESOURCE_CLASSES)
        req.placement.can('placement:resource_classes:delete')
        resource_classes.delete_resource_class(req.placement.db, name)
        responses.no_content(resp)

    @staticmethod
    def _rename(req, resp, name):
        """Before 1.7: the body names the class's new name."""
        responses.require_json_content(req)
        req.placement.can('placement:resource_classes:update')
        new_name = bodies.json_body(req, schemas.RESOURCE_CLASS)['name']
        row = resource_classes.rename_resource_class(req.placement.db, name,
                                                     new_name)
        responses.render(resp, _render_class(req, row))

    @staticmethod
    def _ensure(req, resp, name):
        """From 1.7: create the class if needed, 201 if created, else 204."""
        req.placement.can('placement:resource_classes:update')
        validation.validate({'name': name}, schemas.RESOURCE_CLASS)
        _row, created = resource_classes.ensure_resource_class(
            req.placement.db, name)
        responses.no_content(resp)
        resp.status = 201 if created else 204
        resp.location = responses.location(req, _path(name))
