"""Device profiles: named, ordered lists of request groups (Cyborg's model).

A group maps ``resources:<CLASS>`` to an amount, ``trait:<TRAIT>`` to
``required`` or ``forbidden`` and ``accel:<key>`` to a Cyborg attribute.
Resource class and trait names are stored normalised (upper case,
underscores) and must be known to Placement when the profile is created.
From 1.42 a profile may declare alternatives: sets of two or more of its
groups, by position, each set one need served by the first group of it
a tree can serve ("an A100, else two L40s"). From 1.44 a group may let
classes it requests be split over several providers
(``can_split:<CLASS>``: ``true``).

:func:`expand_request` turns ``device_profile=<name>`` in an
allocation-candidates query into one granular group per profile group,
suffixed as nova suffixes them (``device_profile_<position>``), and each
set of alternatives into an ``alternatives`` parameter naming those
suffixes.
"""

import re
import uuid as uuidlib

import sqlalchemy as sa

from placement_lite import errors
from placement_lite import microversion
from placement_lite import querystring
from placement_lite.db import device_profiles as profiles_db
from placement_lite.db import lookups

RESOURCES = 'resources:'
TRAIT = 'trait:'
#: A group's key letting one of its classes be split (1.44).
CAN_SPLIT = 'can_split:'
#: The allocation-candidates query parameter naming a profile.
QUERY_PARAMETER = 'device_profile'
#: The query parameter of a set of alternatives (1.42).
ALTERNATIVES_PARAMETER = 'alternatives'
SUFFIX_PREFIX = 'device_profile_'
#: Amounts are stored in 32-bit integer columns by Placement.
MAX_AMOUNT = 2 ** 31 - 1
_UUID_SHAPE = re.compile(
    r'^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-'
    r'[0-9a-fA-F]{12}$')


def _looks_like_uuid(value):
    return bool(_UUID_SHAPE.match(value))


def _normalised_name(name):
    return name.upper().replace('-', '_')


def _normalised_group(index, group):
    """``group`` with resource class and trait names normalised.

    Raises BadRequest when two keys normalise to the same name, when an
    amount is too large, or when the group requests no resources.
    """
    normalised = {}
    for key, value in group.items():
        prefix, _sep, name = key.partition(':')
        if key.startswith((RESOURCES, TRAIT, CAN_SPLIT)):
            key = '%s:%s' % (prefix, _normalised_name(name))
            if key in normalised:
                raise errors.BadRequest(
                    'Group %d names %s more than once.' % (index, key),
                    code=errors.DEVICE_PROFILE_INVALID)
        if key.startswith(RESOURCES) and int(value) > MAX_AMOUNT:
            raise errors.BadRequest(
                'Group %d: the amount of %s must be at most %d.'
                % (index, key, MAX_AMOUNT),
                code=errors.DEVICE_PROFILE_INVALID)
        normalised[key] = value
    if not any(key.startswith(RESOURCES) for key in normalised):
        raise errors.BadRequest(
            'Group %d requests no resources: every group needs at least one '
            '"resources:<RESOURCE_CLASS>" key.' % index,
            code=errors.DEVICE_PROFILE_INVALID)
    unrequested = [key[len(CAN_SPLIT):] for key in normalised
                   if key.startswith(CAN_SPLIT)
                   and RESOURCES + key[len(CAN_SPLIT):] not in normalised]
    if unrequested:
        raise errors.BadRequest(
            'Group %d lets resource classes it does not request be split: '
            '%s.' % (index, ', '.join(unrequested)),
            code=errors.DEVICE_PROFILE_INVALID)
    return normalised


def _names_in(groups, prefix):
    return {key[len(prefix):] for group in groups for key in group
            if key.startswith(prefix)}


def _check_names_known(conn, groups):
    """BadRequest unless Placement knows every resource class and trait."""
    classes = _names_in(groups, RESOURCES)
    unknown = classes - set(lookups.resource_class_ids(conn, classes))
    if unknown:
        raise errors.BadRequest(
            'Unknown resource class(es): %s.' % ', '.join(sorted(unknown)),
            code=errors.DEVICE_PROFILE_INVALID)
    traits = _names_in(groups, TRAIT)
    unknown = traits - set(lookups.trait_ids(conn, traits))
    if unknown:
        raise errors.BadRequest(
            'Unknown trait(s): %s.' % ', '.join(sorted(unknown)),
            code=errors.DEVICE_PROFILE_INVALID)


def _checked_alternatives(alternatives, group_count):
    """The sets of ``alternatives`` as lists of int positions (the schema
    takes 1.0 for an integer); BadRequest when a set names a group the
    profile does not have, or one that an earlier set names."""
    checked = []
    set_of = {}
    for index, positions in enumerate(alternatives):
        positions = [int(position) for position in positions]
        missing = [position for position in positions
                   if position >= group_count]
        if missing:
            raise errors.BadRequest(
                'alternatives[%d] names groups the profile does not have: '
                '%s (it has %d, numbered from 0).'
                % (index, ', '.join(map(str, missing)), group_count),
                code=errors.DEVICE_PROFILE_INVALID)
        for position in positions:
            if position in set_of:
                raise errors.BadRequest(
                    'alternatives[%d] names group %d, already in '
                    'alternatives[%d]: a group is in one set of '
                    'alternatives at most.'
                    % (index, position, set_of[position]),
                    code=errors.DEVICE_PROFILE_INVALID)
            set_of[position] = index
        checked.append(positions)
    return checked


def _duplicate_name(name):
    return errors.Conflict(
        'A device profile named %s already exists.' % name,
        code=errors.DEVICE_PROFILE_DUPLICATE_NAME)


def create(db, name, description, groups, alternatives=()):
    """Store a new profile (its shape already validated); returns it.

    Names shaped like a UUID are refused so that a path segment always
    means one thing (see :func:`show`).
    """
    if _looks_like_uuid(name):
        raise errors.BadRequest(
            'A device profile name must not be a UUID: %s.' % name,
            code=errors.DEVICE_PROFILE_INVALID)
    groups = [_normalised_group(index, group)
              for index, group in enumerate(groups)]
    alternatives = _checked_alternatives(alternatives, len(groups))
    new_uuid = str(uuidlib.uuid4())

    def work(conn):
        _check_names_known(conn, groups)
        if profiles_db.name_exists(conn, name):
            raise _duplicate_name(name)
        profiles_db.insert_profile(conn, new_uuid, name, description,
                                   groups, alternatives,
                                   lookups.utcnow().replace(microsecond=0))
        return profiles_db.profile_by_uuid(conn, new_uuid)

    try:
        return db.write(work)
    except sa.exc.IntegrityError:
        # Another writer created the same name since we looked.
        raise _duplicate_name(name)


def list_profiles(db, names=None):
    """All profiles, or those among ``names``, oldest first."""
    with db.reader() as conn:
        if names is None:
            return profiles_db.all_profiles(conn)
        return profiles_db.profiles_by_names(conn, names)


def _find(conn, identifier):
    if _looks_like_uuid(identifier):
        return profiles_db.profile_by_uuid(conn, identifier.lower())
    return profiles_db.profile_by_name(conn, identifier)


def _not_found(identifiers):
    return errors.NotFound(
        'No device profile with uuid or name %s.' % ', '.join(identifiers),
        code=errors.DEVICE_PROFILE_NOT_FOUND)


def show(db, identifier):
    """The profile whose uuid (when ``identifier`` is one) or name matches."""
    with db.reader() as conn:
        profile = _find(conn, identifier)
    if profile is None:
        raise _not_found([identifier])
    return profile


def delete(db, identifiers):
    """Delete the profiles named by uuid or name: all of them, or none
    (NotFound) when any is unknown."""
    def work(conn):
        found = [(identifier, _find(conn, identifier))
                 for identifier in identifiers]
        missing = [identifier for identifier, profile in found
                   if profile is None]
        if missing:
            raise _not_found(missing)
        profiles_db.delete_profiles(conn, [profile['id']
                                           for _ident, profile in found])

    return db.write(work)


def group_suffix(position):
    """The granular suffix of the profile group at ``position``, as nova
    names it."""
    return '%s%d' % (SUFFIX_PREFIX, position)


def _granular_pairs(suffix, group):
    """The query pairs of one profile group; ``accel:`` keys do not filter."""
    resources = ['%s:%s' % (key[len(RESOURCES):], value)
                 for key, value in group.items() if key.startswith(RESOURCES)]
    traits = [('!' if value == 'forbidden' else '') + key[len(TRAIT):]
              for key, value in group.items() if key.startswith(TRAIT)]
    pairs = [('resources' + suffix, ','.join(resources))]
    if traits:
        pairs.append(('required' + suffix, ','.join(traits)))
    split = split_classes(group)
    if split:
        pairs.append(('can_split' + suffix, ','.join(split)))
    return pairs


def split_classes(group):
    """The classes a profile's group lets be split (1.44), in its order."""
    return [key[len(CAN_SPLIT):] for key in group if key.startswith(CAN_SPLIT)]


def shown_group(group, version):
    """``group`` as ``version`` shows it: without its can_split keys
    below 1.44, as any field a later microversion added."""
    if version >= microversion.CAN_SPLIT:
        return group
    return {key: value for key, value in group.items()
            if not key.startswith(CAN_SPLIT)}


def _check_can_split_served(profile, version):
    """Below 1.44 a profile letting classes be split is refused rather
    than expanded without it: its groups would then ask a provider for all
    of each amount, which is not what the profile means."""
    if version < microversion.CAN_SPLIT and any(
            split_classes(group) for group in profile['groups']):
        raise errors.BadRequest(
            "Device profile '%s' lets resource classes be split "
            '(can_split), which needs microversion %s or later; the '
            'request is at %s.' % (profile['name'], microversion.CAN_SPLIT,
                                   microversion.Version(*version)),
            code=errors.DEVICE_PROFILE_CAN_SPLIT_UNSUPPORTED)


def _profile_name(pairs):
    """The one ``device_profile`` value of the query, or None."""
    names = [value for key, value in pairs if key == QUERY_PARAMETER]
    if len(names) > 1:
        raise errors.BadRequest(
            "Query parameter '%s' may be specified only once: one device "
            "profile per request." % QUERY_PARAMETER,
            code=errors.ILLEGAL_DUPLICATE_QUERYPARAM)
    if names and not names[0]:
        raise errors.BadRequest(
            "Query parameter '%s' needs a device profile name."
            % QUERY_PARAMETER, code=errors.QUERYPARAM_BAD_VALUE)
    return names[0] if names else None


def _check_suffixes_free(pairs, suffixes):
    taken = {prefix + suffix
             for prefix in querystring.GROUP_PREFIXES + ('can_split',)
             for suffix in suffixes}
    clashes = sorted({key for key, _value in pairs if key in taken})
    if clashes:
        raise errors.BadRequest(
            "The device profile's groups use the suffixes %s; the request "
            'may not have groups of its own with them: %s.'
            % (', '.join(suffixes), ', '.join(clashes)),
            code=errors.DEVICE_PROFILE_SUFFIX_IN_USE)


def _alternatives_pairs(profile, suffixes, version):
    """An ``alternatives`` pair per set of alternatives of ``profile``,
    naming its groups' ``suffixes``.

    Below 1.42 a profile with alternatives is refused rather than expanded
    without them: its groups alone would ask for every alternative at
    once, which is not what the profile means."""
    if profile['alternatives'] and version < microversion.PROFILE_ALTERNATIVES:
        raise errors.BadRequest(
            "Device profile '%s' declares alternatives, which need "
            'microversion %s or later; the request is at %s.'
            % (profile['name'], microversion.PROFILE_ALTERNATIVES,
               microversion.Version(*version)),
            code=errors.DEVICE_PROFILE_ALTERNATIVES_UNSUPPORTED)
    return [(ALTERNATIVES_PARAMETER,
             ','.join(suffixes[position] for position in positions))
            for positions in profile['alternatives']]


def _check_own_alternatives(pairs, profile, suffixes):
    """BadRequest when an ``alternatives`` value of the query names a
    group that one of the profile's sets holds already: a group is an
    alternative in one set at most."""
    in_sets = {suffixes[position] for positions in profile['alternatives']
               for position in positions}
    for key, value in pairs:
        if key != ALTERNATIVES_PARAMETER:
            continue
        named = sorted(in_sets.intersection(
            part.strip() for part in value.split(',')))
        if named:
            raise errors.BadRequest(
                "alternatives=%s names %s, already in an alternatives set "
                "of device profile '%s'." % (value, ', '.join(named),
                                             profile['name']),
                code=errors.QUERYPARAM_BAD_VALUE)


def expand_request(db, pairs, version):
    """The allocation-candidates query ``pairs`` (at ``version``) with
    ``device_profile=NAME`` replaced, in place, by one granular group per
    group of that profile, then an ``alternatives`` pair per set of its
    alternatives.

    Group ``i`` of the profile becomes ``resourcesdevice_profile_<i>`` (and
    ``requireddevice_profile_<i>`` for its traits), so the expanded query is
    exactly the one a client could have written by hand, and the engine
    checks it with the same rules. Queries without ``device_profile`` are
    returned unchanged.
    """
    name = _profile_name(pairs)
    if name is None:
        return pairs
    with db.reader() as conn:
        profile = profiles_db.profile_by_name(conn, name)
    if profile is None:
        raise errors.BadRequest(
            "No device profile named '%s'." % name,
            code=errors.DEVICE_PROFILE_UNKNOWN)
    suffixes = [group_suffix(position)
                for position in range(len(profile['groups']))]
    _check_suffixes_free(pairs, suffixes)
    alternatives = _alternatives_pairs(profile, suffixes, version)
    _check_can_split_served(profile, version)
    _check_own_alternatives(pairs, profile, suffixes)
    expanded = []
    for key, value in pairs:
        if key != QUERY_PARAMETER:
            expanded.append((key, value))
            continue
        for suffix, group in zip(suffixes, profile['groups']):
            expanded += _granular_pairs(suffix, group)
        expanded += alternatives
    return expanded
