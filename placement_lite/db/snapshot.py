"""What the providers an allocation-candidates request looks at have and
use, read once per request and shared by the search, the combination and
the provider summaries.

A Snapshot reads each scope of trees the request looks at (scope_reads):
the whole cloud (cloud, patched from the last whole-cloud read of the
process), a window of trees, one tree or the trees of some roots. What a
provider has is taken from the stock kept per process while its
generation is unchanged (stock). Each provider's summary is kept too,
while its stock, its parent's and root's stocks and its usage are
unchanged.
"""

import dataclasses
import typing
import weakref

from placement_lite.db import candidates
from placement_lite.db import cloud
from placement_lite.db import scope_reads
from placement_lite.db import stock


def with_room(capacities, amount):
    """The part of ``capacities`` ({provider id: scope_reads.Capacity})
    whose free capacity holds ``amount``. (Comprehensions: a method call
    per provider costs more than the test.)"""
    return {provider_id: c for provider_id, c in capacities.items()
            if amount <= c.capacity - c.used}


def within_units(capacities, amount):
    """The part of ``capacities`` whose min_unit, max_unit and step_size
    allow ``amount``."""
    return {provider_id: c for provider_id, c in capacities.items()
            if c.min_unit <= amount <= c.max_unit
            and amount % c.step_size == 0}


@dataclasses.dataclass(slots=True)
class ProviderSummary:
    """One provider as provider summaries show it. Shared by the requests
    that show the provider while it is unchanged (see _SHOWN): never
    changed, but for ``rendered``."""

    uuid: str
    parent_uuid: typing.Optional[str]
    root_uuid: str
    #: ((resource class name, capacity, used), ...) in class id order.
    resources: tuple
    #: Trait names in trait id order (standard traits first, then custom
    #: ones as created), the order the reference shows.
    trait_names: tuple
    #: (shape, bytes): the summary as the HTTP layer last rendered it, made
    #: by the first request that shows it in that shape and reused by the
    #: next ones, as long as the summary itself is. (One shape, not one per
    #: shape: clients of one cloud ask at one microversion, and a process
    #: keeps tens of thousands of summaries.)
    rendered: typing.Optional[tuple] = dataclasses.field(
        default=None, compare=False, repr=False)


#: {engine: _Shown}, per process: most providers shown by one request show
#: the same again in the next. Several requests share these summaries, so
#: nothing may change them.
_SHOWN = weakref.WeakKeyDictionary()


class _Shown(typing.NamedTuple):
    """The summaries a process keeps, and the class names they show.

    A summary shows class names, and renaming a class (PUT
    /resource_classes/{name} at 1.2-1.6, by this service or another on the
    same database) changes no provider's generation or usage: only the
    names every request reads tell it. Summaries made under other names
    are dropped, all at once (renames are rare)."""

    #: {rc id: name} the summaries were made with.
    class_names: dict
    #: stock.ByProvider of (its stock.Stock, its parent's, its root's,
    #: {rc id: used}, ProviderSummary).
    by_provider: stock.ByProvider


def _shown_under(engine, class_names):
    """The ByProvider of the summaries kept for ``engine`` that show
    ``class_names`` (a request's fresh read of every class's name)."""
    shown = _SHOWN.get(engine)
    if shown is None or shown.class_names != class_names:
        shown = _SHOWN[engine] = _Shown(class_names, stock.ByProvider())
    return shown.by_provider
_NO_USAGE = {}
#: Fewer trees than this are always read by root.
FEW_TREES = 64


class Window(typing.NamedTuple):
    """Trees searched together: those whose root id is in
    ``first``..``last`` (inclusive), and with ``roots`` only those."""

    first: int
    last: int
    #: Whether it holds most of the cloud (see Snapshot._scope).
    most_of_cloud: bool
    #: A frozenset of root ids, or None for every tree of the range.
    roots: typing.Optional[frozenset] = None
    #: How many trees it holds.
    trees: int = 1
    #: Whether later requests search it again (it does not start at a tree
    #: picked at random): its read is then kept (db.cloud).
    kept: bool = False

    @classmethod
    def of_roots(cls, roots, kept=False):
        """The window of the trees ``roots`` (a few of the cloud's)."""
        return cls(min(roots), max(roots), False, frozenset(roots),
                   len(roots), kept)

    def holds(self, root_id):
        return self.first <= root_id <= self.last and (
            self.roots is None or root_id in self.roots)

    def not_holding(self, root_ids):
        """Those of the set ``root_ids`` not in the window."""
        if self.roots is not None:
            return root_ids - self.roots
        first, last = self.first, self.last
        return {root_id for root_id in root_ids
                if not first <= root_id <= last}


class Snapshot:
    """The providers one request has read: where each is, what it has
    (its stock) and what it uses."""

    def __init__(self, conn, class_names, transactions_seen=None):
        """``class_names`` maps every resource class id to its name;
        ``transactions_seen``: what the request's first statement saw
        (candidates.Known), on PostgreSQL."""
        self.conn = conn
        self.class_names = class_names
        self.transactions_seen = transactions_seen
        self._at_rest = None
        self._shown = _shown_under(conn.engine, class_names)
        #: {provider id: (parent id, root id, stock.Stock)} of every provider
        #: read.
        self._providers = {}
        #: {provider id: {rc id: amount used}}; no entry: nothing used.
        self._used = {}
        #: Trees read whole: every tree (the cloud.CloudRead of the whole
        #: cloud, once read; windows may be cut from it), or those of these
        #: windows and roots.
        self._cloud = None
        #: The cloud.CloudRead of the whole cloud, when the request read it
        #: only to order its trees (tree_order): the trees it then reads are
        #: cut from it.
        self._whole = None
        self._windows = []
        self._trees = set()
        #: {frozenset of rc ids: whether few providers of a window read
        #: whole had an inventory of them}.
        self._rare_classes = {}

    def capacities(self, rc_ids, root_id=None, window=None, also_ids=()):
        """{rc id: {provider id: Capacity}} for every inventory of
        ``rc_ids``, of the providers of the whole cloud, or with
        ``root_id`` of that tree, or with ``window`` (a Window) of those
        trees and ``also_ids``: the cost is then bounded by the window
        (see _scope for how each is read).

        The dicts returned may be shared with other requests: never change
        them."""
        if not rc_ids:
            return {}
        scope, params = self._scope(root_id=root_id, window=window,
                                    rc_ids=rc_ids, also_ids=also_ids)
        windowed = window is not None and root_id is None
        if windowed and scope == scope_reads.WHOLE_CLOUD:
            return self._cut_from_cloud(rc_ids, window, also_ids)
        read = self._read(scope, params,
                          kept=windowed and window.kept)
        if not scope.of_classes:
            self._cover(root_id, window)
        found = read.capacities(rc_ids)
        if windowed and not scope.of_classes:
            holding = set().union(*found.values())
            self._rare_classes[frozenset(rc_ids)] = (
                4 * len(holding) < len(read.providers))
        return found

    def _scope(self, root_id=None, window=None, roots=None, rc_ids=(),
               also_ids=()):
        """(scope_reads.Scope, its parameters): the one place deciding how
        the providers asked for are read.

        * The trees ``roots`` (summaries, stocks): by root, or the whole
          cloud when they are half of it or more and not few (filtering
          by root then costs more than reading the others).
        * The tree ``root_id``, within ``window`` when given.
        * A ``window`` of trees (and the providers ``also_ids``): the
          whole cloud, cut to the window, when it holds most of the cloud
          (the last whole-cloud read is kept between requests, a window's
          is not); only the providers with an inventory of ``rc_ids``
          once a window read whole has shown that fewer than a quarter of
          its providers have one (few of its trees can be shown, and
          those are read again when they are).
        * Nothing: the whole cloud.
        """
        whole_cloud = scope_reads.WHOLE_CLOUD, {}
        if roots is not None:
            if len(roots) >= FEW_TREES and 2 * len(roots) >= (
                    candidates.trees_lately(self.conn)):
                return whole_cloud
            return scope_reads.Scope(by_roots=True), {'roots': sorted(roots)}
        params = {'root_id': root_id, 'rc_ids': sorted(rc_ids)}
        if window is None:
            if root_id is None:
                return whole_cloud
            return scope_reads.Scope(by_root=True), params
        windowed = root_id is None
        of_classes = windowed and self._rare_classes.get(frozenset(rc_ids),
                                                         False)
        if windowed and window.most_of_cloud and not of_classes:
            return whole_cloud
        if window.roots is None:
            params.update(first=window.first, last=window.last)
        else:
            params['roots'] = sorted(window.roots)
        if also_ids:
            params['also_ids'] = sorted(also_ids)
        return scope_reads.Scope(by_root=not windowed,
                                 by_window=window.roots is None,
                                 by_roots=window.roots is not None,
                                 with_also=bool(also_ids),
                                 of_classes=of_classes), params

    def at_rest(self):
        """The read of the whole cloud kept by the process if nothing has
        committed since it was read (cloud.at_rest), else None; asked once
        per request, in its first statement when it could."""
        if self._at_rest is None:
            self._at_rest = (cloud.at_rest(self.conn, self.transactions_seen)
                             or False)
        return self._at_rest or None

    def read_whole_cloud(self):
        """Read every provider, index who holds each class and the
        providers of each tree (windows are cut from it: cloud.read), and
        make every provider's summary, as the first request searching the
        whole cloud would (what warm_caches needs); returns the summaries
        (see summaries)."""
        read = self._read(scope_reads.WHOLE_CLOUD, {})
        read.capacities({rc_id for place in read.providers.values()
                         for rc_id, *_ in place[2].inventories})
        read.trees()
        return self.summaries({place[1] for place in read.providers.values()})

    def tree_order(self, orders):
        """The trees of the whole cloud (read now if not yet) in order of
        what they keep free of some classes: the tree_order.TreeOrder of
        ``orders`` ((rc id, sign), ...), kept and patched with the
        process's read of the whole cloud."""
        return self._whole_read().tree_order(orders)

    def any_holder_among(self, rc_id, provider_ids):
        """Whether one of ``provider_ids`` has an inventory of ``rc_id``
        (in the whole cloud)."""
        held = self._whole_read().holders_of(rc_id)
        return any(provider_id in held for provider_id in provider_ids)

    def _whole_read(self):
        """The cloud.CloudRead of the whole cloud, read once per request
        (the trees of a request that reads only some are cut from it)."""
        if self._cloud is not None:
            return self._cloud
        if self._whole is None:
            self._whole = cloud.read(self.conn, self._places,
                                     seen_now=self.transactions_seen)
        return self._whole

    def _cut_from_cloud(self, rc_ids, window, also_ids):
        if self._cloud is None:
            self._read(scope_reads.WHOLE_CLOUD, {})
        holds = window.holds
        return {rc_id: {provider_id: capacity
                        for provider_id, capacity in held.items()
                        if holds(capacity.root_id) or provider_id in also_ids}
                for rc_id, held in self._cloud.capacities(rc_ids).items()}

    def tree_read(self, root_id):
        """{provider id: uuid} of the providers of the tree ``root_id``
        read so far, in id order (reads nothing)."""
        return {provider_id: place[2].uuid for provider_id, place
                in sorted(item for item in self._providers.items()
                          if item[1][1] == root_id)}

    def uuids_read(self, provider_ids):
        """{provider id: uuid} of those of ``provider_ids`` read so far
        (reads nothing)."""
        providers = self._providers
        return {provider_id: providers[provider_id][2].uuid
                for provider_id in provider_ids if provider_id in providers}

    def sharing_among(self, provider_ids):
        """Those of ``provider_ids`` (all read) sharing their inventory:
        the trait is in their stock."""
        providers = self._providers
        return {p for p in provider_ids
                if candidates.SHARING_TRAIT in providers[p][2].trait_names}

    def unread(self, provider_ids):
        """Those of ``provider_ids`` not read (reads nothing)."""
        providers = self._providers
        return {p for p in provider_ids if p not in providers}

    def trait_names(self, provider_id):
        """The trait names of a provider read (reads nothing)."""
        return self._providers[provider_id][2].trait_names

    def parents(self, root_ids):
        """{provider id: parent id} for every provider of the given
        trees."""
        return {provider_id: parent_id
                for provider_id, (parent_id, _root, _stock)
                in self._of_trees(root_ids)}

    def summaries(self, root_ids):
        """{provider id: ProviderSummary} of every provider of the trees
        rooted at ``root_ids``, in provider id order."""
        providers = self._providers
        used_of = self._used
        shown = self._shown
        summaries = {}
        for provider_id, (parent_id, root_id, has) in sorted(
                self._of_trees(root_ids)):
            parent = None if parent_id is None else providers[parent_id][2]
            root = providers[root_id][2]
            used = used_of.get(provider_id, _NO_USAGE)
            last = shown.get(provider_id)
            if (last is not None and last[0] is has and last[1] is parent
                    and last[2] is root
                    and (last[3] is used or last[3] == used)):
                summaries[provider_id] = last[4]
            else:
                summaries[provider_id] = self._summary(
                    provider_id, has, parent, root, used)
        shown.prune(self.conn)
        return summaries

    def _summary(self, provider_id, has, parent, root, used):
        """The ProviderSummary of a provider, kept for the next request."""
        class_names = self.class_names
        summary = ProviderSummary(
            has.uuid, None if parent is None else parent.uuid, root.uuid,
            tuple((class_names[rc_id], capacity, used.get(rc_id, 0))
                  for rc_id, capacity, _min, _max, _step in has.inventories),
            has.trait_names)
        self._shown[provider_id] = (has, parent, root, used, summary)
        return summary

    def _of_trees(self, root_ids):
        """(provider id, (parent id, root id, stock.Stock)) for every
        provider of the trees ``root_ids``, read first where not read
        yet."""
        self._read_trees(root_ids)
        return [(provider_id, place)
                for provider_id, place in self._providers.items()
                if place[1] in root_ids]

    def _cover(self, root_id, window):
        """Note the trees just read whole: the tree ``root_id`` and/or the
        trees of ``window`` (_read notes the whole cloud)."""
        if window is None:
            if root_id is not None:
                self._trees.add(root_id)
        elif root_id is None:
            self._windows.append(window)
        elif window.holds(root_id):
            self._trees.add(root_id)

    def _read_trees(self, root_ids):
        """Read every provider of the trees ``root_ids`` not read yet."""
        if self._cloud is not None:
            return
        missing = set(root_ids) - self._trees
        for window in self._windows:
            if not missing:
                return
            missing = window.not_holding(missing)
        if not missing:
            return
        scope, params = self._scope(roots=missing)
        self._read(scope, params)
        if scope != scope_reads.WHOLE_CLOUD:
            self._trees.update(missing)

    def _read(self, scope, params, kept=False):
        """Read the place, stock and usage of the providers in ``scope``
        (from the read the process keeps of it, for the whole cloud or
        ``kept``: see db.cloud); returns their scope_reads.Read."""
        conn = self.conn
        seen = self.transactions_seen
        if scope == scope_reads.WHOLE_CLOUD:
            read = self._cloud = cloud.read(conn, self._places,
                                            seen_now=seen)
        elif (self._cloud or self._whole) is not None and not (
                kept and self.at_rest()):
            # The request read the whole cloud since a commit: what it reads
            # after is cut from that read, as it was then.
            read = (self._cloud or self._whole).cut(scope, params)
        elif kept:
            read = cloud.read(conn, self._places, scope, params, seen)
        elif self.at_rest():
            read = self.at_rest().cut(scope, params)
        else:
            read = scope_reads.read(conn, scope, params, self._places)
        self._providers.update(read.providers)
        used = self._used
        if used:
            for id_ in read.providers:
                used.pop(id_, None)
        used.update(read.used)
        return read

    def _places(self, rows):
        """stock.places for the state ``rows`` just read; a provider
        deleted since an earlier read of this request is gone."""
        places = stock.places(self.conn, rows,
                              lambda roots: self._scope(roots=roots))
        if len(places) < len(rows):
            for row in rows:
                if row[0] not in places:
                    self._providers.pop(row[0], None)
        return places
