"""/device_profiles: placement_lite's extension, from microversion 1.40.

Shapes follow Cyborg's v2 API: create takes one profile (an object, or
Cyborg's list holding exactly one) and answers 201 with the bare profile
object; show wraps it in ``device_profile``, list in ``device_profiles``.
From 1.42 a profile has ``alternatives`` too, in bodies and answers;
from 1.44 its groups may have ``can_split:<CLASS>`` keys.
"""

from placement_lite import errors
from placement_lite import microversion
from placement_lite.domain import device_profiles
from placement_lite.handlers import bodies
from placement_lite.handlers import dates
from placement_lite.handlers import query
from placement_lite.handlers import responses
from placement_lite.handlers import validation
from placement_lite.schemas import device_profiles as schema


def _path(profile):
    return '/device_profiles/%s' % profile['uuid']


def _timestamp(moment):
    return moment.isoformat() + 'Z' if moment else None


def _serialize(req, profile):
    """The profile as ``req``'s microversion shows it: without its
    alternatives below 1.42, nor its groups' can_split keys below 1.44,
    as any field a later microversion added."""
    version = microversion.of(req)
    shown = {
        'uuid': profile['uuid'],
        'name': profile['name'],
        'description': profile['description'],
        'groups': [device_profiles.shown_group(group, version)
                   for group in profile['groups']],
    }
    if version >= microversion.PROFILE_ALTERNATIVES:
        shown['alternatives'] = profile['alternatives']
    shown.update(
        created_at=_timestamp(profile['created_at']),
        updated_at=_timestamp(profile['updated_at']),
        links=[{'rel': 'self',
                'href': req.env.get('SCRIPT_NAME', '') + _path(profile)}])
    return shown


def _last_modified(profiles):
    return dates.newest(*[moment for profile in profiles
                         for moment in (profile['created_at'],
                                        profile['updated_at'])])


def _names_query(req, required):
    """The ``name=a,b`` list of the query string (None when absent and
    not ``required``); any other parameter is a 400."""
    pairs = query.query_pairs(req)
    unknown = sorted({key for key, _value in pairs if key != 'name'})
    if unknown:
        raise errors.BadRequest(
            'Invalid query string parameters: unknown parameter(s) %s; '
            'only "name" is accepted.' % ', '.join(unknown),
            code=errors.QUERYPARAM_BAD_VALUE)
    values = [value for _key, value in pairs]
    if len(values) > 1:
        raise errors.BadRequest(
            'Invalid query string parameters: "name" given more than once; '
            'separate names with commas.',
            code=errors.ILLEGAL_DUPLICATE_QUERYPARAM)
    if not values:
        if required:
            raise errors.BadRequest(
                'Invalid query string parameters: "name" is required.',
                code=errors.QUERYPARAM_MISSING_VALUE)
        return None
    names = values[0].split(',')
    if not all(names):
        raise errors.BadRequest(
            'Invalid query string parameters: "name" must be a comma '
            'separated list of non-empty names.',
            code=errors.QUERYPARAM_BAD_VALUE)
    return names


def _profile_body(req):
    """The one profile of a create request: an object, or a list of one."""
    body = bodies.json_body(req)
    if isinstance(body, list):
        if len(body) != 1:
            raise errors.BadRequest(
                'Exactly one device profile can be created per request; '
                'the list holds %d.' % len(body),
                code=errors.DEVICE_PROFILE_INVALID)
        body = body[0]
    validation.validate(body, microversion.schema_for(microversion.of(req),
                                                schema.CREATE),
                  code=errors.DEVICE_PROFILE_INVALID)
    return body


class DeviceProfiles:
    def on_get(self, req, resp):
        responses.require_version(req, microversion.DEVICE_PROFILES)
        req.placement.can('placement_lite:device_profiles:list')
        profiles = device_profiles.list_profiles(
            req.placement.db, _names_query(req, required=False))
        responses.render(resp, {'device_profiles': [_serialize(req, profile)
                                               for profile in profiles]})
        dates.set_last_modified(req, resp, _last_modified(profiles))

    def on_post(self, req, resp):
        responses.require_version(req, microversion.DEVICE_PROFILES)
        req.placement.can('placement_lite:device_profiles:create')
        body = _profile_body(req)
        profile = device_profiles.create(
            req.placement.db, body['name'], body.get('description'),
            body['groups'], body.get('alternatives', ()))
        responses.render(resp, _serialize(req, profile), status=201)
        resp.set_header('location', responses.location(req, _path(profile)))
        dates.set_last_modified(req, resp, _last_modified([profile]))

    def on_delete(self, req, resp):
        responses.require_version(req, microversion.DEVICE_PROFILES)
        req.placement.can('placement_lite:device_profiles:delete')
        device_profiles.delete(req.placement.db,
                               _names_query(req, required=True))
        responses.no_content(resp)


class DeviceProfile:
    def on_get(self, req, resp, uuid_or_name):
        responses.require_version(req, microversion.DEVICE_PROFILES)
        req.placement.can('placement_lite:device_profiles:show')
        profile = device_profiles.show(req.placement.db, uuid_or_name)
        responses.render(resp, {'device_profile': _serialize(req, profile)})
        dates.set_last_modified(req, resp, _last_modified([profile]))

    def on_delete(self, req, resp, uuid_or_name):
        responses.require_version(req, microversion.DEVICE_PROFILES)
        req.placement.can('placement_lite:device_profiles:delete')
        device_profiles.delete(req.placement.db, [uuid_or_name])
        responses.no_content(resp)
