"""Resource providers: create, read, list, update (names and trees), delete.

Providers are returned as database rows carrying ``uuid``, ``name``,
``generation``, ``parent_provider_uuid``, ``root_provider_uuid``,
``created_at`` and ``updated_at`` (plus internal ids).

Renaming or moving a provider does not change its generation: the reference
keeps generations for inventories, allocations, traits and aggregates.
"""

import dataclasses

from placement_lite import errors
from placement_lite.db import aggregates as aggregates_db
from placement_lite.db import lookups
from placement_lite.db import providers as providers_db

#: ``update_provider`` leaves the parent alone unless given one (or None).
KEEP_PARENT = object()


def provider_or_404(conn, uuid, detail=None):
    """The provider row for ``uuid``; 404 if none.

    ``detail`` is given on the routes where the reference's handler catches
    the missing provider and answers the 404 itself, in its own words (a
    :class:`errors.NotFound`); elsewhere the 404 is its object layer's
    (:class:`errors.ObjectNotFound`)."""
    return found_or_404(lookups.provider_by_uuid(conn, uuid), uuid, detail)


def found_or_404(found, uuid, detail=None):
    """``found``, what a read of the provider ``uuid`` found of it; the
    404 of :func:`provider_or_404` when that is None."""
    if found is None:
        if detail:
            raise errors.NotFound(detail)
        raise errors.ObjectNotFound(
            'No resource provider with uuid %s found' % uuid)
    return found


def generation_conflict():
    """The 409 for a provider generation that is not the one stored."""
    return errors.Conflict(
        "Resource provider's generation already changed. Please update the "
        "generation and try again.", code=errors.CONCURRENT_UPDATE)


def get_provider(db, uuid):
    with db.reader() as conn:
        return provider_or_404(conn, uuid)


def create_provider(db, uuid, name, parent_uuid=None):
    """Create a provider (a child of ``parent_uuid`` when given); its row."""

    def refuse(reason):
        raise errors.BadRequest(
            'Unable to create resource provider "%s", %s: Object action '
            'create failed because: %s' % (name, uuid, reason))

    def work(conn):
        if not name:
            refuse('name is required')
        parent = None
        if parent_uuid is not None:
            if parent_uuid == uuid:
                refuse('parent provider UUID cannot be same as UUID. Please '
                       'set parent provider UUID to None if there is no '
                       'parent.')
            parent = lookups.provider_by_uuid(conn, parent_uuid)
            if parent is None:
                refuse('parent provider UUID does not exist.')
        try:
            providers_db.insert_provider(conn, uuid, name, parent)
        except providers_db.DuplicateProvider as exc:
            value = uuid if exc.column == 'uuid' else name
            raise errors.Conflict(
                'Conflicting resource provider %s: %s already exists.'
                % (exc.column, value), code=errors.DUPLICATE_NAME)
        return lookups.provider_by_uuid(conn, uuid)

    return db.write(work)


def update_provider(db, uuid, name, parent_uuid=KEEP_PARENT,
                    allow_reparenting=False):
    """Rename a provider and (with ``parent_uuid``) move it in the trees.

    A provider without a parent may always get one; moving it to another
    parent or making it a root needs ``allow_reparenting`` (1.37). The new
    parent may not be the provider or one of its descendants. Moving a
    provider moves its whole subtree to the new root.

    Returns ``(provider row after, provider row before)``.
    """

    def refuse(action, reason):
        raise errors.BadRequest(
            'Unable to save resource provider %s: Object action %s failed '
            'because: %s' % (uuid, action, reason))

    def work(conn):
        before = provider_or_404(conn, uuid)
        parent_wanted = (before.parent_provider_uuid
                         if parent_uuid is KEEP_PARENT else parent_uuid)
        changes = {'name': name}
        if parent_wanted is not None:
            parent = lookups.provider_by_uuid(conn, parent_wanted)
            if parent is None:
                refuse('create', 'parent provider UUID does not exist.')
            if (before.parent_provider_id not in (None, parent.id)
                    and not allow_reparenting):
                refuse('update', 're-parenting a provider is not currently '
                       'allowed.')
            subtree = providers_db.subtree_ids(conn, before)
            if parent.id in subtree:
                refuse('update', 'creating loop in the provider tree is not '
                       'allowed.')
            changes.update(parent_provider_id=parent.id,
                           root_provider_id=parent.root_provider_id)
        elif before.parent_provider_id is not None:
            if not allow_reparenting:
                refuse('update', 'un-parenting a provider is not currently '
                       'allowed.')
            subtree = providers_db.subtree_ids(conn, before)
            changes.update(parent_provider_id=None, root_provider_id=before.id)
        changes = {column: value for column, value in changes.items()
                   if getattr(before, column) != value}
        if 'root_provider_id' in changes:
            providers_db.set_root(conn, subtree, changes['root_provider_id'])
        if changes:
            try:
                providers_db.update_provider(conn, before.id, **changes)
            except providers_db.DuplicateProvider:
                raise errors.Conflict(
                    'Conflicting resource provider %s already exists.' % name,
                    code=errors.DUPLICATE_NAME)
        return lookups.provider_by_uuid(conn, uuid), before

    return db.write(work)


def delete_provider(db, uuid):
    """Delete a provider that has neither children nor allocations."""
    def work(conn):
        provider = provider_or_404(
            conn, uuid,
            'No resource provider with uuid %s found for delete' % uuid)
        parent_conflict = errors.Conflict(
            'Unable to delete parent resource provider %s: It has child '
            'resource providers.' % uuid,
            code=errors.PROVIDER_CANNOT_DELETE_PARENT)
        if providers_db.has_children(conn, provider.id):
            raise parent_conflict
        if providers_db.has_allocations(conn, provider.id):
            raise errors.Conflict(
                'Unable to delete resource provider %s: Resource provider has '
                'allocations.' % uuid, code=errors.PROVIDER_IN_USE)
        try:
            providers_db.delete_provider(conn, provider.id)
        except providers_db.StillReferenced:
            # A child (or allocation) arrived after the checks above; the
            # reference reports it as a child too.
            raise parent_conflict

    return db.write(work)


@dataclasses.dataclass
class ProviderFilters:
    """What GET /resource_providers can filter on (all optional).

    ``member_of``: list of sets of aggregate uuids (one of each set);
    ``required_traits``: list of sets of trait names (one of each set);
    ``resources``: {resource class name: amount the provider can still take}.
    """
    name: str = None
    uuid: str = None
    in_tree: str = None
    member_of: list = dataclasses.field(default_factory=list)
    forbidden_aggregates: set = dataclasses.field(default_factory=set)
    required_traits: list = dataclasses.field(default_factory=list)
    forbidden_traits: set = dataclasses.field(default_factory=set)
    resources: dict = dataclasses.field(default_factory=dict)


def _trait_ids_or_400(conn, names):
    ids = lookups.trait_ids(conn, names)
    unknown = sorted(set(names) - set(ids))
    if unknown:
        raise errors.BadRequest(
            'Invalid trait(s) in "required" parameter: No such trait(s): %s.'
            % unknown[0])
    return ids


def list_providers(db, filters):
    """Provider rows matching ``filters``, oldest first.

    The filters apply in the reference's order, which decides which error
    (or empty answer) a request with several problems gets: an unknown
    ``in_tree`` provider, or no provider with the required traits or in the
    required aggregates, is an empty list even when a later filter names an
    unknown forbidden trait or resource class.

    Read from the replica when there is one: a provider created a moment
    ago may be missing until the replica replays its creation.
    """
    with db.replica_reader() as conn:
        try:
            within, excluding = _listing_filters(conn, filters)
        except errors.BadRequest:
            if (filters.in_tree and
                    lookups.provider_by_uuid(conn, filters.in_tree) is None):
                return []
            raise
        if within is None:
            return []
        return providers_db.list_providers(
            conn, name=filters.name, uuid=filters.uuid,
            in_tree=filters.in_tree, within=within, excluding=excluding)


def _listing_filters(conn, filters):
    """The id queries (within, excluding) for list_providers, or
    (None, None) when a filter already shows that nothing matches."""
    within = []
    excluding = []
    # A filter that finds nothing is checked first only when a later one
    # could still refuse the request: otherwise the listing finds nothing
    # as well, without the extra statement.
    refusable_after_traits = bool(filters.forbidden_traits
                                  or filters.resources)
    if filters.required_traits:
        ids = _trait_ids_or_400(conn, set().union(*filters.required_traits))
        query = providers_db.providers_with_all_trait_sets(
            [{ids[name] for name in any_of}
             for any_of in filters.required_traits])
        if refusable_after_traits and not providers_db.any_row(conn, query):
            return None, None
        within.append(query)
    if filters.forbidden_traits:
        ids = _trait_ids_or_400(conn, filters.forbidden_traits)
        excluding.append(providers_db.providers_with_any_trait(ids.values()))
    if filters.member_of:
        known = aggregates_db.aggregate_ids(
            conn, set().union(*filters.member_of))
        id_sets = [{known[uuid] for uuid in any_of if uuid in known}
                   for any_of in filters.member_of]
        if not all(id_sets):
            return None, None
        query = providers_db.providers_in_all_aggregate_sets(id_sets)
        if filters.resources and not providers_db.any_row(conn, query):
            return None, None
        within.append(query)
    if filters.forbidden_aggregates:
        known = aggregates_db.aggregate_ids(
            conn, filters.forbidden_aggregates)
        if known:
            excluding.append(providers_db.providers_in_any_aggregate(
                known.values()))
    if filters.resources:
        class_ids = lookups.resource_class_ids(conn, filters.resources)
        for number, (class_name, amount) in enumerate(
                filters.resources.items()):
            if class_name not in class_ids:
                raise errors.BadRequest(
                    'Invalid resource class in resources parameter: No '
                    'such resource class %s.' % class_name)
            within.append(providers_db.providers_with_capacity(
                class_ids[class_name], amount, number))
    return within, excluding
