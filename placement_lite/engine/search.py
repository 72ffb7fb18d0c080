"""Phase one of the engine: which providers can serve each request group,
and under which anchor (the root of the tree an allocation request is built
around).

Each group is filtered with a few set-based lookups, over the
capacities of the request's ``db.cloud.View`` read once per window of
trees (or once for the whole cloud). The result is, per group, the
providers that may serve it under each anchor; nothing here combines
groups.

Rules, as the reference applies them:

* A suffixed group is served by one provider that has capacity for all of
  its resources, has its required traits, lacks its forbidden ones, and is
  itself in its aggregates. Its anchor is the provider's root; a sharing
  provider (trait MISC_SHARES_VIA_AGGREGATE) also serves, as the same
  option, every tree it shares an aggregate with.
* The unsuffixed group takes each resource class from any provider of the
  anchor's tree, or from a sharing provider serving that tree (not with
  ``in_tree``). Aggregates on the root span the whole tree. Its required
  traits are met by the chosen providers together (checked when combining).
* A resourceless suffixed group (1.36) is served by any provider matching
  its traits and aggregates; with neither, by none.
* ``root_required`` keeps only anchors whose root has/lacks those traits,
  ``root_member_of`` (1.41) those whose root is (not) in the aggregates.

Each step tells the request's explain.Tally what it kept (a no-op
without explain).
"""

import dataclasses
import functools
import itertools
import typing

import numpy as np

from placement_lite import errors
from placement_lite.db import cloud
from placement_lite.engine import explain

Step = explain.Step


class NoCandidates(Exception):
    """Some group cannot be served at all: the answer is empty. ``step``:
    the filter that found no provider in the whole cloud, before any was
    read (explain reports it), if one did."""

    def __init__(self, step=None):
        super().__init__(step)
        self.step = step


@dataclasses.dataclass
class GroupChoices:
    """Who can serve one group, by anchor root id.

    For a suffixed group ``by_anchor[anchor]`` is a list of provider ids
    (each serves the whole group); for the unsuffixed group it is a dict
    {rc id: [provider ids]}, one provider to be picked per class.
    """

    suffix: str
    #: {rc id: amount}, in the group's order.
    amounts: dict
    by_anchor: dict
    required_trait_ids: list = dataclasses.field(default_factory=list)
    #: {provider id: its trait ids among the required ones} (spread group).
    trait_owners: dict = dataclasses.field(default_factory=dict)

    @property
    def spread(self):
        return not self.suffix


@dataclasses.dataclass
class SearchResult:
    groups: list
    #: {rc id: {provider id: reads.Capacity}} (a _ByClass)
    capacities: dict
    #: {provider id: root id} for every provider offered.
    roots: dict
    sharing: set
    #: {rc id: name} for every resource class.
    class_names: dict
    #: Anchors (root ids) under which every group can be served.
    anchors: list
    #: The cloud.View the search read.
    view: cloud.View

    def root_of(self, provider_id):
        return self.roots[provider_id]

    def trees_named(self):
        """The roots of the trees whose providers a candidate may name: a
        provider offered under an anchor is of the anchor's tree, or
        shares its inventory."""
        return set(self.anchors) | {self.roots[p] for p in self.sharing}


class _ByClass(dict):
    """{rc id: {provider id: reads.Capacity}} of the classes searched, from
    their Holdings ({rc id: Holdings}), each made when first asked: the
    combination looks providers up one by one (plain dicts), and a
    request of the unsuffixed group alone asks for none."""

    def __init__(self, held_by_class):
        super().__init__()
        self._held_by_class = held_by_class

    def __missing__(self, rc_id):
        by_id = self[rc_id] = self._held_by_class[rc_id].by_id()
        return by_id


class Searcher:
    """Searches the groups of one request, over the whole cloud or over
    windows of trees (cloud.Window).

    Names, aggregates and trait filters of a group are resolved the first
    time the group is reached and kept for later windows. A group is
    reached in a window only if every earlier group matched there; when
    some group is never reached, check_unreached_names reports an unknown
    name exactly when the whole-cloud search would (which stops at the
    first group that cannot be served anywhere, as the reference does, so
    later groups' unknown names go unnoticed).
    """

    def __init__(self, conn, request, tally=explain.NOT_TALLIED):
        groups = list(request.groups.values())
        explained = request.explain if isinstance(request.explain,
                                                  str) else None
        #: The request's door to what the process keeps and the database.
        self.view = cloud.request_view(
            conn,
            {name for group in groups for name in group.resources},
            set().union(request.root_required, request.root_forbidden,
                        *(group.forbidden_traits for group in groups),
                        *(names for group in groups
                          for names in group.required_traits),
                        # Checked by engine.ranked.
                        request.ranking.trait_names if request.ranking
                        else ()),
            set().union(*(group.forbidden_aggregates for group in groups),
                        *(uuids for group in groups
                          for uuids in group.member_of),
                        request.root_forbidden_aggregates,
                        *request.root_member_of),
            {group.in_tree for group in groups if group.in_tree}
            | ({explained} if explained else set()))
        known = self.view.known
        self.tally = tally
        tally.start(known.class_names, self.view)
        #: The root of the tree explain=<uuid> names, or None.
        self.explained_root = None
        if explained:
            self.explained_root = known.tree_roots.get(explained)
            if self.explained_root is None:
                raise errors.BadRequest(
                    'No resource provider with uuid %s to explain.'
                    % explained, code=errors.QUERYPARAM_BAD_VALUE)
            tally.explaining(explained, self.explained_root)
        class_ids = {name: id_ for id_, name in known.class_names.items()}
        self.names = _Names(
            self.view, known, class_ids,
            *_allowed_anchors(self.view, request, known, tally),
            {in_tree: {class_ids[name] for group in groups
                       if group.in_tree == in_tree
                       for name in group.resources if name in class_ids}
             for in_tree in {group.in_tree for group in groups}})
        self._groups = [_GroupSearch(group, self.names) for group in groups]
        #: How many groups (in order) have been searched at least once.
        self.groups_reached = 0
        #: Indexes of the groups that could be served in some window.
        self._served_somewhere = set()

    def few_trees(self, read_holders=True):
        """The sorted root ids of the only trees that could serve the
        request, when root_required allows few roots, or a group is kept
        to one tree (in_tree: that tree and those its sharing providers
        serve), or few providers are in the aggregates of a group's
        member_of, or (with
        ``read_holders``) a class or trait some group asks for is held by
        few providers (View.holders_if_few), none of those providers
        sharing its inventory; None otherwise (or when a name is unknown:
        the search tells). Searching those trees alone finds what
        searching every tree would.

        Raises NoCandidates as the search would: a group's member_of
        naming no provider (its group is resolved here, and every group
        before it has known names, so resolving raises nothing else)."""
        names = self.names
        known = names.known
        narrowed = self.view.few_enough(names.allowed_anchors)
        for searcher in self._groups:
            if searcher.has_unknown_names():
                return None
            group = searcher.group
            if group.in_tree:
                narrowed = self._in_tree(narrowed, group.in_tree)
            if group.member_of:
                narrowed = self._narrowed(narrowed, self.view.few_enough(
                    searcher.resolve().aggregate_roots))
            if not (read_holders and group.resources):
                continue
            for name in group.resources:
                rc_id = names.class_ids[name]
                if rc_id not in known.largest:
                    return None
                narrowed = self._narrowed(narrowed, self.view.holders_if_few(
                    rc_id=rc_id, most=self.view.worth_reading(narrowed)))
            for alternatives in group.required_traits:
                narrowed = self._narrowed(narrowed, self.view.holders_if_few(
                    trait_ids=_trait_ids(known, alternatives),
                    most=self.view.worth_reading(narrowed)))
        if narrowed is None:
            return None
        return sorted(narrowed - names.excluded_anchors)

    def _in_tree(self, roots, in_tree):
        """``roots`` (None: every root) narrowed to the trees where a group
        kept to the tree of the provider ``in_tree`` can be served: that
        tree, and those its sharing providers serve (unchanged when there
        is no such provider: the search tells)."""
        root = self.names.known.tree_roots.get(in_tree)
        if root is None:
            return roots
        sharing = self.names.every_sharing_provider.intersection(
            self.view.parents([root]))
        trees = {root}.union(*self.view.anchors_for_sharing(
            sharing).values())
        return trees if roots is None else roots & trees

    def _narrowed(self, roots, holders):
        """``roots`` (None: every root) narrowed to the trees of
        ``holders`` ({provider id: root id}; None: held widely). A sharing
        holder serves other trees too: then nothing is narrowed."""
        if holders is None or not self.names.every_sharing_provider.isdisjoint(
                holders):
            return roots
        trees = set(holders.values())
        return trees if roots is None else roots & trees

    @property
    def all_groups_reached(self):
        return self.groups_reached == len(self._groups)

    def search(self, window=None):
        """The SearchResult for ``window`` (a cloud.Window; None: the
        whole cloud).

        Raises NoCandidates when a group cannot be served anywhere; in a
        window, returns None when some group cannot be served there."""
        self.tally.searching(window)
        in_window = _InWindow(self.names, window, self.tally)
        capacities = {}
        held = []
        resourceless_roots = {}
        groups = []
        for index, searcher in enumerate(self._groups):
            self.groups_reached = max(self.groups_reached, index + 1)
            choices = searcher.run(in_window)
            if choices.by_anchor:
                self._served_somewhere.add(index)
            else:
                if window is None:
                    raise NoCandidates()
                return None
            groups.append(choices)
            for rc_id, capable in searcher.by_class.items():
                capacities[rc_id] = (capacities[rc_id].union(capable)
                                     if rc_id in capacities else capable)
                held.append(capable)
            resourceless_roots.update(searcher.resourceless_roots)
        roots = cloud.roots_by_id(held)
        roots.update(resourceless_roots)
        anchors = set.intersection(*(set(g.by_anchor) for g in groups))
        self.tally.all_groups(anchors)
        return SearchResult(groups, _ByClass(capacities), roots,
                            in_window.sharing_among(roots),
                            self.names.class_names, sorted(anchors),
                            self.view)


    def first_unserved(self, root_ids):
        """{root id: the suffix of the first group (in order) no provider
        of the tree can serve} for those of ``root_ids`` (searched as one
        window) that cannot serve every group. The tally is not told:
        explain asks it of trees it did not search for their candidates."""
        in_window = _InWindow(self.names, cloud.Window.of_roots(root_ids))
        left = set(root_ids)
        unserved = {}
        for searcher in self._groups:
            try:
                served = searcher.run(in_window).by_anchor
            except NoCandidates:
                served = {}
            for root_id in left.difference(served):
                unserved[root_id] = searcher.group.suffix
            left.intersection_update(served)
            if not left:
                break
        return unserved

    def check_unreached_names(self):
        """After every window was searched without reaching every group:
        raise the 400 (an unknown name) the whole-cloud search would
        raise, if any; it looks at a group only while every earlier group
        can be served somewhere.

        Groups are resolved in order (cheap: names and filters, no
        capacities), which raises what resolving them raises. A group
        never served in the windows it was searched in may still be
        served where an earlier group failed; only when a later group has
        an unknown name is it searched over the whole cloud to decide."""
        for index, group in enumerate(self._groups):
            group.resolve()
            if not any(later.has_unknown_names()
                       for later in self._groups[index + 1:]):
                return
            if index not in self._served_somewhere and not group.run(
                    _InWindow(self.names, None)).by_anchor:
                return


@dataclasses.dataclass(frozen=True)
class _Names:
    """What every group of one request looks up: the names it uses and
    the providers they stand for, read once."""

    #: The request's cloud.View.
    view: object
    #: cloud.Known.
    known: object
    #: {resource class name: id} of every class.
    class_ids: dict
    #: Root ids allowed by root_required and root_member_of (None: all).
    allowed_anchors: object
    #: Root ids root_required forbids, when only forbidding (see
    #: _allowed_anchors).
    excluded_anchors: frozenset
    #: {in_tree uuid (or None): ids of the known classes the groups with
    #: that in_tree ask for}.
    classes_by_tree: dict

    @property
    def class_names(self):
        return self.known.class_names

    @functools.cached_property
    def every_sharing_provider(self):
        """Ids of every provider of the cloud sharing its inventory, read
        when first needed: only for providers a search did not read (or
        found once for the cloud's read, while it is at rest)."""
        return self.view.sharing_provider_ids()

    @property
    def largest(self):
        """{class id: the most one provider could give}."""
        return self.known.largest


class _InWindow:
    """The search of one window (a cloud.Window; None: the whole
    cloud): what its groups read there, read once per window."""

    def __init__(self, names, window, tally=explain.NOT_TALLIED):
        self.names = names
        self.view = names.view
        self.window = window
        self.tally = tally
        self._inventories = {}
        #: {sharing provider id: anchors in the window}: in a window, of
        #: every sharing provider serving one of its trees, read at once;
        #: over the whole cloud, of those asked for so far.
        self._anchors_of_sharing = None if window is None else (
            self.view.sharing_anchors_in_window(window))

    def inventories(self, in_tree, tree_root):
        """{rc id: cloud.Holdings} in the window (and
        tree ``tree_root``) for every known class that groups with this
        ``in_tree`` ask for, and of the sharing providers serving its
        trees."""
        if in_tree not in self._inventories:
            self._inventories[in_tree] = self.view.capacities(
                self.names.classes_by_tree[in_tree], tree_root, self.window,
                also_ids=(() if self.window is None
                          else set(self._anchors_of_sharing)))
        return self._inventories[in_tree]

    def sharing_among(self, provider_ids):
        """Those of ``provider_ids`` sharing their inventory: told by the
        stocks read, or for a provider not read (a resourceless group's)
        by every_sharing_provider."""
        unread = self.view.unread(provider_ids)
        found = self.view.sharing_among(
            provider_ids if not unread else
            [p for p in provider_ids if p not in unread])
        if unread:
            found |= unread & self.names.every_sharing_provider
        return found

    def tree_providers(self, root_id):
        """{provider id: uuid} of the tree ``root_id`` in the window, as
        read (after its inventories were)."""
        window = self.window
        if window is not None and not window.holds(root_id):
            return {}
        return self.view.tree_read(root_id)

    def sharing_anchors(self, provider_ids):
        """{sharing provider id: anchors in the window} of the sharing
        providers ``provider_ids``."""
        if self._anchors_of_sharing is None:
            self._anchors_of_sharing = {}
        known = self._anchors_of_sharing
        if self.window is None:
            missing = [p for p in provider_ids if p not in known]
            if missing:
                found = self.view.anchors_for_sharing(missing)
                for provider_id in missing:
                    known[provider_id] = found.get(provider_id, set())
        return {p: known.get(p, set()) for p in provider_ids}

    def with_allowed_anchors(self, pairs):
        """The (provider, anchor) ``pairs`` whose anchor is allowed (see
        allowed)."""
        if not pairs:
            return pairs
        return list(itertools.compress(pairs, self.allowed(np.fromiter(
            (a for _p, a in pairs), np.int64, len(pairs))).tolist()))

    def allowed(self, anchors):
        """Which of ``anchors`` (an array of root ids) are in the window
        and allowed by root_required (a boolean array)."""
        kept = np.ones(len(anchors), bool)
        window = self.window
        if window is not None:
            kept &= (window.first <= anchors) & (anchors <= window.last)
            if window.roots is not None:
                kept &= np.isin(anchors, _array(window.roots))
        if self._allowed_anchors is not None:
            kept &= np.isin(anchors, self._allowed_anchors)
        if len(self._excluded_anchors):
            kept &= ~np.isin(anchors, self._excluded_anchors)
        return kept

    @functools.cached_property
    def _allowed_anchors(self):
        allowed = self.names.allowed_anchors
        return None if allowed is None else _array(allowed)

    @functools.cached_property
    def _excluded_anchors(self):
        return _array(self.names.excluded_anchors)


def _allowed_anchors(view, request, known, tally):
    """(Root ids allowed by root_required and root_member_of, or None when
    not filtering; root ids excluded).

    A root_required that only forbids (nova's ``!COMPUTE_STATUS_DISABLED``
    on every request) excludes the few roots having those traits instead
    of allowing every other root of the cloud, which would cost a read of
    every root; explain, which counts the roots each filter allows, takes
    the allowed ones."""
    allowed = None
    excluded = frozenset()
    required = _trait_ids(known, request.root_required)
    forbidden = _trait_ids(known, request.root_forbidden)
    if forbidden and not required and not tally.active:
        excluded = frozenset(view.roots_with_any_trait(forbidden))
    elif required or forbidden:
        allowed = _narrowed(allowed, 'root_required', view.roots_with_traits(
            required, forbidden), tally)
    if request.root_member_of or request.root_forbidden_aggregates:
        allowed = _narrowed(
            allowed, 'root_member_of', view.provider_ids_in_aggregates(
                request.root_member_of, roots_only=True,
                forbidden=request.root_forbidden_aggregates),
            tally)
    return allowed, excluded


def _narrowed(allowed, name, roots, tally):
    """``allowed`` (None: every root) narrowed to ``roots``, which the
    filter ``name`` allows; NoCandidates when none is left."""
    tally.root_filter(name, roots)
    allowed = roots if allowed is None else allowed & roots
    if not allowed:
        raise NoCandidates()
    return allowed


def _trait_ids(known, names):
    """The ids of the traits ``names``; 400 when one does not exist."""
    for name in sorted(names):
        if name not in known.trait_ids:
            raise errors.BadRequest('No such trait(s): %s.' % name)
    return {known.trait_ids[name] for name in names}


@dataclasses.dataclass
class _Filters:
    """A group's resolved names and provider filters.

    Traits are checked on the stocks the view read, for the providers
    a search reads anyway (those with an inventory of a class asked for):
    the work then follows the window searched, not the cloud. Only a
    resourceless group, whose providers were not read, queries the
    providers having them."""

    #: {rc id: amount}, in the group's order.
    amounts: dict
    #: The providers member_of allows (None: any).
    in_aggregates: set
    #: {provider id: root id} of the same.
    aggregate_roots: dict
    #: [set of trait ids, any one of which is required, ...]
    required: list
    #: The same, as sets of names.
    required_names: list
    forbidden_names: frozenset
    tree_root: int
    bad_aggregates: set
    #: Resourceless single-provider groups: the providers having a
    #: forbidden trait, and those having the required ones.
    bad_traits: set
    with_traits: set


#: The steps after resource_class that keep the providers of a class
#: able to give the amount, in order.
_CAPACITY_STEPS = (('capacity', cloud.with_room),
                   ('units', cloud.within_units))


class _GroupSearch:
    def __init__(self, group, names):
        self.group = group
        self.names = names
        self.view = names.view
        self._filters = None
        self._resourceless = None
        self.by_class = {}
        self.resourceless_roots = {}

    def run(self, in_window):
        """Who can serve the group under the anchors of ``in_window`` (an
        _InWindow). The capacity steps of each class run in turn, then the
        other filters; the first step that keeps nothing ends the group's
        search in the window."""
        group = self.group
        suffix = group.suffix
        tally = in_window.tally
        try:
            filters = self.resolve()
        except NoCandidates as nothing:
            tally.kept(suffix, Step(nothing.step), ())
            raise
        amounts = filters.amounts
        largest = self.names.largest
        for rc_id, amount in amounts.items():
            if amount > largest.get(rc_id, 0):
                # No provider anywhere could give that much, used or not.
                tally.largest(suffix, Step('largest', rc_id, amount),
                              largest.get(rc_id, 0))
                raise NoCandidates()
        by_class = self.by_class = {}
        inventories = in_window.inventories(group.in_tree, filters.tree_root)
        if filters.tree_root is not None and amounts and tally.active:
            tally.kept(suffix, Step('in_tree'),
                       in_window.tree_providers(filters.tree_root))
        empty = GroupChoices(suffix, amounts, {})
        for rc_id, amount in amounts.items():
            capable = inventories[rc_id]
            tally.kept(suffix, Step('resource_class', rc_id, amount), capable)
            for name, narrowed in _CAPACITY_STEPS:
                if not capable:
                    return empty
                capable = narrowed(capable, amount)
                tally.kept(suffix, Step(name, rc_id, amount), capable)
            if not capable:
                return empty
            by_class[rc_id] = capable
        if group.use_same_provider:
            return GroupChoices(suffix, amounts, self._single_provider_choices(
                filters, in_window))
        pairs_by_class = {}
        for rc_id, capable in by_class.items():
            pairs = self._class_pairs(rc_id, capable, filters, in_window)
            if pairs is None:
                return empty
            pairs_by_class[rc_id] = pairs
        by_anchor, trait_owners = self._spread_choices(
            filters, pairs_by_class, tally, in_window.view)
        return GroupChoices(suffix, amounts, by_anchor,
                            filters.required, trait_owners)

    def has_unknown_names(self):
        """Whether resolving the group may raise a 400: it names a
        resource class or a trait that does not exist."""
        group = self.group
        known = self.names.known
        return (any(name not in self.names.class_ids
                    for name in group.resources)
                or any(name not in known.trait_ids
                       for name in set().union(group.forbidden_traits,
                                               *group.required_traits)))

    def resolve(self):
        """The group's names and filters, looked up once, in the
        reference's order: classes, aggregates, traits, tree; an unknown
        name is a 400, an unmatched filter means no candidates at all."""
        if self._filters is not None:
            return self._filters
        group = self.group
        view = self.view
        known = self.names.known
        amounts = self._class_amounts()
        in_aggregates = None
        aggregate_roots = None
        if group.member_of:
            aggregate_roots = view.provider_ids_in_aggregates(
                group.member_of, with_roots=True)
            if not aggregate_roots:
                raise NoCandidates('member_of')
            in_aggregates = set(aggregate_roots)
        required = [_trait_ids(known, alternatives)
                    for alternatives in group.required_traits]
        forbidden = _trait_ids(known, group.forbidden_traits)
        tree_root = None
        if group.in_tree:
            tree_root = known.tree_roots.get(group.in_tree)
            if tree_root is None:
                raise NoCandidates('in_tree')
        bad_aggregates = (
            view.provider_ids_in_any_aggregate(group.forbidden_aggregates)
            if group.forbidden_aggregates else set())
        bad_traits = with_traits = None
        if not amounts:
            bad_traits = view.provider_ids_with_any_trait(forbidden)
            with_traits = (view.provider_ids_with_traits(required)
                           if required else None)
        self._filters = _Filters(
            amounts, in_aggregates, aggregate_roots, required,
            [frozenset(alternatives) for alternatives
             in group.required_traits],
            frozenset(group.forbidden_traits), tree_root, bad_aggregates,
            bad_traits, with_traits)
        return self._filters

    def _class_amounts(self):
        names = self.group.resources
        found = self.names.class_ids
        amounts = {}
        for name, amount in names.items():
            if name not in found:
                raise errors.BadRequest(
                    'Invalid resource class in resources parameter: No such '
                    'resource class %s.' % name)
            amounts[found[name]] = amount
        return amounts

    def _single_provider_choices(self, filters, in_window):
        by_class = self.by_class
        tally = in_window.tally
        if filters.amounts:
            providers = set.intersection(*(set(c) for c in by_class.values()))
            if not _kept(tally, self.group.suffix, 'all_resources',
                         providers):
                return {}
            providers = self._single_provider_filter(
                filters, providers, tally, in_window.view)
            if providers is None:
                return {}
            held = next(iter(by_class.values())).by_id()
            roots = {p: held[p].root_id for p in providers}
        else:
            providers, roots = self._resourceless_providers(filters, tally)
            if providers is None:
                return {}
            self.resourceless_roots.update(roots)
        sharing_here = in_window.sharing_anchors(
            sorted(in_window.sharing_among(providers)))
        pairs = [(provider_id, anchor) for provider_id in sorted(providers)
                 for anchor in ({roots[provider_id]}
                                | sharing_here.get(provider_id, set()))]
        by_anchor = {}
        for provider_id, anchor in in_window.with_allowed_anchors(pairs):
            by_anchor.setdefault(anchor, []).append(provider_id)
        tally.kept_trees(self.group.suffix, Step('trees'), by_anchor)
        return by_anchor

    def _single_provider_filter(self, filters, providers, tally,
                                read=None):
        """``providers`` (None: any) narrowed by the group's traits and
        aggregates, in explain's order: required traits, member_of,
        forbidden traits, forbidden aggregates; None when one of them
        keeps none. ``read`` (a Snapshot) gives the trait names of
        ``providers``; without it (a resourceless group) the providers
        resolve() found are used."""
        group = self.group
        suffix = group.suffix
        if filters.required:
            providers = (set(filters.with_traits) if providers is None
                         else _having_traits(providers,
                                             filters.required_names, read))
            if not _kept(tally, suffix, 'required_traits', providers):
                return None
        if filters.in_aggregates is not None:
            providers = (set(filters.in_aggregates) if providers is None
                         else providers & filters.in_aggregates)
            if not _kept(tally, suffix, 'member_of', providers):
                return None
        if group.forbidden_traits:
            providers = (providers - filters.bad_traits if read is None
                         else _lacking_traits(providers,
                                              filters.forbidden_names, read))
            if not _kept(tally, suffix, 'forbidden_traits', providers):
                return None
        if group.forbidden_aggregates:
            providers = providers - filters.bad_aggregates
            if not _kept(tally, suffix, 'forbidden_aggregates', providers):
                return None
        return providers

    def _resourceless_providers(self, filters, tally):
        """(providers, {provider: root}) for a group without resources,
        over the whole cloud, found once."""
        if self._resourceless is None:
            if filters.required or filters.in_aggregates is not None:
                providers = self._single_provider_filter(filters, None,
                                                         tally)
            else:
                providers = set()
            self._resourceless = (providers,
                                  self.view.roots_of(providers))
        return self._resourceless

    def _spread_choices(self, filters, pairs_by_class, tally, read):
        """({anchor: {rc id: [provider ids]}} from each class's _Pairs, for
        the anchors where every class has a provider and the providers
        could together have the required traits; and {provider id: its
        trait ids among the required ones})."""
        first, *others = [pairs.anchors for pairs in pairs_by_class.values()]
        common = functools.reduce(np.intersect1d, others, np.unique(first))
        if tally.active:
            tally.kept_trees('', Step('trees'), set(common.tolist()))
        in_order = common.tolist()
        by_anchor = {anchor: {} for anchor in in_order}
        kept_pairs = []
        for rc_id, pairs in pairs_by_class.items():
            kept = np.isin(pairs.anchors, common)
            providers, anchors = pairs.providers[kept], pairs.anchors[kept]
            kept_pairs.append((providers, anchors))
            # By anchor, then provider: each anchor of ``common`` has a run.
            order = np.lexsort((providers, anchors))
            bounds = _run_starts(anchors[order]).tolist() + [len(order)]
            listed = providers[order].tolist()
            for anchor, start, end in zip(in_order, bounds, bounds[1:]):
                by_anchor[anchor][rc_id] = listed[start:end]
        if not (filters.required and in_order):
            return by_anchor, {}
        # A tree whose chosen providers together could never have the
        # required traits cannot serve the group. (Every class has a
        # provider under each anchor in ``common``.)
        trait_ids = self.names.known.trait_ids
        wanted = frozenset().union(*filters.required_names)
        providers = np.concatenate([p for p, _a in kept_pairs])
        anchors = np.concatenate([a for _p, a in kept_pairs])
        ids, name_sets, of_provider = read.trait_name_sets(
            np.unique(providers))
        # Per set of names the providers have, its trait ids among the
        # required ones, and which of the required alternatives it has.
        owned = [{trait_ids[name] for name in names if name in wanted}
                 for names in name_sets]
        has = np.array([[bool(alternatives & held) for held in owned]
                        for alternatives in filters.required], bool)
        owners = dict(zip(ids.tolist(), [owned[at]
                                         for at in of_provider.tolist()]))
        order = np.argsort(anchors, kind='stable')
        # Per anchor (in order), whether its providers have each
        # alternative.
        offered = np.logical_or.reduceat(
            has[:, of_provider[np.searchsorted(ids, providers[order])]],
            _run_starts(anchors[order]), axis=1)
        viable = {anchor: by_anchor[anchor] for anchor, served in zip(
            in_order, offered.all(axis=0).tolist()) if served}
        tally.kept_trees('', Step('required_traits'), viable)
        return viable, owners

    def _class_pairs(self, rc_id, capable, filters, in_window):
        """The _Pairs that may give the class ``rc_id`` to the unsuffixed
        group: providers of the anchor's tree, and sharing providers of
        the trees they serve (not with in_tree), in anchors of the window
        root filters allow; None when a filter of the group keeps none."""
        group = self.group
        tally = in_window.tally
        in_aggregates = filters.in_aggregates
        read = in_window.view
        providers, anchors = capable.ids, capable.roots
        if filters.tree_root is None:
            shared = _lacking_traits(in_window.sharing_among(capable),
                                     filters.forbidden_names, read)
            if in_aggregates is not None:
                shared &= in_aggregates
            served = in_window.sharing_anchors(sorted(shared))
            roots = capable.roots_of(served)
            more = [(provider_id, anchor)
                    for provider_id, served_anchors in served.items()
                    for anchor in served_anchors
                    if anchor != roots[provider_id]]
            if more:
                providers = np.concatenate((providers, np.fromiter(
                    (p for p, _a in more), np.int64, len(more))))
                anchors = np.concatenate((anchors, np.fromiter(
                    (a for _p, a in more), np.int64, len(more))))
        if in_aggregates is not None:
            inside = _array(in_aggregates)
            kept = np.isin(providers, inside) | np.isin(anchors, inside)
            providers, anchors = providers[kept], anchors[kept]
            _kept_providers(tally, Step('member_of', rc_id), providers)
            if not len(providers):
                return None
        if group.forbidden_traits:
            kept = np.isin(providers, _array(_lacking_traits(
                providers, filters.forbidden_names, read)))
            providers, anchors = providers[kept], anchors[kept]
            _kept_providers(tally, Step('forbidden_traits', rc_id),
                            providers)
            if not len(providers):
                return None
        if group.forbidden_aggregates:
            bad = _array(filters.bad_aggregates)
            kept = ~(np.isin(providers, bad) | np.isin(anchors, bad))
            providers, anchors = providers[kept], anchors[kept]
            _kept_providers(tally, Step('forbidden_aggregates', rc_id),
                            providers)
            if not len(providers):
                return None
        kept = in_window.allowed(anchors)
        return _Pairs(providers[kept], anchors[kept])


class _Pairs(typing.NamedTuple):
    """(provider, anchor) pairs: the provider may give a class under the
    anchor (of its own tree, or one it shares its inventory with)."""

    #: Provider ids (an array).
    providers: object
    #: The anchor of each (an array).
    anchors: object


def _run_starts(ordered):
    """Where each run of equal values of ``ordered`` (a sorted array)
    starts: [0] when it is empty."""
    return np.concatenate(([0], np.flatnonzero(np.diff(ordered)) + 1))


def _array(ids):
    """The ids of a collection, as an array."""
    return np.fromiter(ids, np.int64, len(ids))


def _kept_providers(tally, step, providers):
    """Tell ``tally`` that ``providers`` (an array) of the unsuffixed group
    passed ``step``."""
    if tally.active:
        tally.kept('', step, set(providers.tolist()))


def _having_traits(providers, required_names, read):
    """Those of ``providers`` having, for each set of ``required_names``,
    one of its traits (``read``: the Snapshot that read them)."""
    return read.with_traits(providers, lambda names: all(
        not alternatives.isdisjoint(names)
        for alternatives in required_names))


def _lacking_traits(providers, forbidden_names, read):
    """Those of ``providers`` having none of ``forbidden_names``
    (``read``: the Snapshot that read them)."""
    if not forbidden_names:
        return set(providers)
    return read.with_traits(providers, forbidden_names.isdisjoint)


def _kept(tally, suffix, name, providers):
    """``providers``, which the step ``name`` of group ``suffix`` kept,
    told to ``tally``."""
    tally.kept(suffix, Step(name), providers)
    return providers
