"""/traits and /traits/{name} (from microversion 1.6)."""

from placement_lite import errors
from placement_lite import microversion
from placement_lite.domain import traits
from placement_lite.handlers import dates
from placement_lite.handlers import query
from placement_lite.handlers import responses
from placement_lite.handlers import validation
from placement_lite.schemas import traits as schemas

_INVALID_NAME = ('The trait is invalid. A valid trait must be no longer than '
                 '255 characters, start with the prefix "CUSTOM_" and use '
                 'following characters: "A"-"Z", "0"-"9" and "_"')


def _name_filter(value):
    """``in:A,B`` or ``startswith:PREFIX`` as keyword arguments of the list.

    Another operator filters nothing, as in the reference.
    """
    operator, sep, operand = value.partition(':')
    if not sep:
        raise errors.BadRequest(
            'Badly formatted name parameter. Expected name query string '
            'parameter in form: ?name=[in|startswith]:[name1,name2|prefix]. '
            'Got: "%s"' % value)
    if operator == 'in':
        return {'names': operand.split(',')}
    if operator == 'startswith':
        return {'prefix': operand}
    return {}


def _associated_filter(value):
    if value.lower() not in ('true', 'false'):
        raise errors.BadRequest('The query parameter "associated" only '
                                'accepts "true" or "false"')
    return {'associated': value.lower() == 'true'}


class Traits:
    def on_get(self, req, resp):
        responses.require_version(req, microversion.TRAITS)
        responses.require_json_accept(req)
        req.placement.can('placement:traits:list')
        query.validate(req, schemas.LIST_QUERY)
        given = query.last_values(req)
        filters = {}
        if 'name' in given:
            filters.update(_name_filter(given['name']))
        if 'associated' in given:
            filters.update(_associated_filter(given['associated']))
        rows = traits.list_traits(req.placement.db, **filters)
        responses.render(resp, {'traits': [row.name for row in rows]})
        dates.set_last_modified(req, resp, dates.newest(*(
            row.updated_at or row.created_at for row in rows)))


class Trait:
    def on_get(self, req, resp, name):
        responses.require_version(req, microversion.TRAITS)
        req.placement.can('placement:traits:show')
        row = traits.get_trait(req.placement.db, name)
        responses.no_content(resp)
        dates.set_last_modified(req, resp, row.created_at)

    def on_put(self, req, resp, name):
        responses.require_version(req, microversion.TRAITS)
        req.placement.can('placement:traits:update')
        try:
            validation.validate(name, schemas.CUSTOM_TRAIT)
        except errors.BadRequest:
            raise errors.BadRequest(_INVALID_NAME)
        row, created = traits.ensure_trait(req.placement.db, name)
        responses.no_content(resp)
        resp.status = 201 if created else 204
        resp.location = responses.location(req, '/traits/%s' % name)
        dates.set_last_modified(req, resp, row.created_at)

    def on_delete(self, req, resp, name):
        responses.require_version(req, microversion.TRAITS)
        req.placement.can('placement:traits:delete')
        traits.delete_trait(req.placement.db, name)
        responses.no_content(resp)
