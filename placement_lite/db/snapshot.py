"""What the providers an allocation-candidates request looks at have and
use, read once per request and shared by the search, the combination and
the provider summaries.

For each scope of trees a request looks at (the whole cloud, a window of
trees, one tree, the trees of some roots) two things are read, in one
statement (each round trip to the database costs more than most of these
reads take to run):

* every provider's place and version: parent, root, generation and, on
  SQLite, creation time;
* the amounts used, per provider and resource class.

What a provider *has* (its uuid, its inventories and its trait names: its
stock) is kept per process between requests, for each provider as of its
generation. Every change to inventories or traits bumps the generation in
the same transaction (here and in the reference), so a kept stock is good
while the generation just read is unchanged. On SQLite, which gives the id
of a deleted provider to the next one created, the creation time tells the
two apart (a provider without one is read every time); PostgreSQL takes ids
from a sequence and never gives one out twice, so there it is not read.

Usage is never kept on its own, because deleting a consumer's allocations
does not bump the generation; nor are parent and root, because
re-parenting does not bump it either.

A read of the whole cloud starts from the last one made in the process.
It reads the state of every provider and every allocation each as one
text value, a line per row. When both texts equal the last ones, the cloud
is at rest and the last read serves as it is, with the capacities it
built. Otherwise the lines are compared as sets: only the providers whose
state line changed are placed again (and the index of who holds each
class is patched for them), and usage is patched by the allocation lines
gone and new. Each provider's summary is kept too, while its stock, its
parent's and root's stocks and its usage are unchanged.
"""

import collections
import functools
import typing
import weakref

import sqlalchemy as sa

from placement_lite.db import candidates
from placement_lite.db import tables

rp = tables.resource_providers
inv = tables.inventories
alloc = tables.allocations
rpt = tables.resource_provider_traits
traits = tables.traits

# Built once: building an alias, and its columns, on every query costs more
# than running the small queries that use it.
in_scope_rp = rp.alias('in_scope')


class Capacity(typing.NamedTuple):
    """One provider's inventory of one resource class, and its usage."""

    root_id: int
    #: int((total - reserved) * allocation_ratio), as summaries show it.
    capacity: int
    used: int
    min_unit: int
    max_unit: int
    step_size: int

    @property
    def free(self):
        return self.capacity - self.used


def able_to_give(capacities, amount):
    """The part of ``capacities`` ({provider id: Capacity}) where
    ``amount`` fits now: free capacity, min_unit, max_unit and step_size
    allow it. (One comprehension: a method call per provider costs more
    than the test.)"""
    return {provider_id: c for provider_id, c in capacities.items()
            if amount <= c.capacity - c.used
            and c.min_unit <= amount <= c.max_unit
            and amount % c.step_size == 0}


class ProviderSummary(typing.NamedTuple):
    """One provider as provider summaries show it."""

    uuid: str
    parent_uuid: typing.Optional[str]
    root_uuid: str
    #: {resource class name: {'capacity': capacity, 'used': used}}, in
    #: class id order.
    resources: dict
    #: Trait names in trait id order (standard traits first, then custom
    #: ones as created), the order the reference shows.
    trait_names: tuple


class _Stock(typing.NamedTuple):
    """What a provider has, as of one generation.

    Hot loops read the first two fields by index: attribute access on a
    named tuple costs more than the comparison."""

    generation: int
    #: The creation time as text (SQLite), or _ONE_IDENTITY.
    identity: object
    uuid: str
    #: ((rc id, capacity, min_unit, max_unit, step_size), ...) in class id
    #: order.
    inventories: tuple
    #: Trait names in trait id order.
    trait_names: tuple


#: {engine: {provider id: _Stock}}, per process.
_STOCK = weakref.WeakKeyDictionary()
#: {engine: {provider id: (its _Stock, its parent's, its root's, {rc id:
#: used}, ProviderSummary)}}, per process: most providers shown by one
#: request show the same again in the next. Several requests share these
#: summaries, so nothing may change them.
_SHOWN = weakref.WeakKeyDictionary()
#: {engine: _Read}: the last read of the whole cloud, per process. The
#: next one starts from it and places again only the providers whose state
#: row changed (see _Read.patched).
_LAST_CLOUD = weakref.WeakKeyDictionary()
#: A process forgets every stock it keeps beyond this many providers
#: (deleted providers are never looked up again).
_STOCK_LIMIT = 200_000
#: Fewer trees than this are always read by root.
_FEW_TREES = 64
_NO_USAGE = {}
_new_tuple = tuple.__new__


def _rows(conn, query, params):
    """Every row of ``query`` as a plain tuple, read straight from the
    database driver: for the large reads, where building SQLAlchemy's Row
    objects costs more than it gives."""
    result = conn.execute(query, params)
    try:
        return result.cursor.fetchall()
    finally:
        result.close()


class _Lines:
    """A table read as one text value, one line per row (see
    _cloud_query): compared whole with the last read of the same table,
    which is cheap, and as a set of lines only when it differs."""

    __slots__ = ('text', '_lines')

    def __init__(self, text):
        self.text = text or ''
        self._lines = None

    @property
    def lines(self):
        if self._lines is None:
            self._lines = (frozenset(self.text.split('\n')) if self.text
                           else frozenset())
        return self._lines

    def changes_since(self, last):
        """(lines gone, lines new) since the ``last`` read."""
        if self.text == last.text:
            return frozenset(), frozenset()
        return last.lines - self.lines, self.lines - last.lines


class _Read:
    """The providers of one read, what they use, and who among them has an
    inventory of each resource class (indexed when first asked for). Never
    changed once made: a later request may share it, or patch a copy of it
    (see _LAST_CLOUD)."""

    __slots__ = ('state', 'usage', 'providers', 'used',
                 '_holders_by_class', '_capacities')

    def __init__(self, providers, used, holders=None, state=None,
                 usage=None):
        #: {provider id: (parent id, root id, _Stock)}
        self.providers = providers
        #: {provider id: {rc id: amount used}}; no entry: nothing used.
        self.used = used
        #: {rc id: {provider id: (root id, capacity, min_unit, max_unit,
        #: step_size)}}
        self._holders_by_class = {} if holders is None else holders
        #: {rc id: {provider id: Capacity}}, made when first asked for.
        self._capacities = {}
        #: The state and usage read, as _Lines (whole-cloud reads only).
        self.state = state
        self.usage = usage

    def capacities(self, rc_ids):
        """{rc id: {provider id: Capacity}} of every inventory of
        ``rc_ids``, with the usage of this read."""
        made = self._capacities
        missing = [rc_id for rc_id in rc_ids if rc_id not in made]
        if missing:
            holders = self._holders(missing)
            used_of = self.used
            for rc_id in missing:
                found = {}
                for provider_id, (tree, capacity, min_unit, max_unit,
                                  step_size) in holders[rc_id].items():
                    used = used_of.get(provider_id)
                    # tuple.__new__: a third of the cost of Capacity(...).
                    found[provider_id] = _new_tuple(Capacity, (
                        tree, capacity, used.get(rc_id, 0) if used else 0,
                        min_unit, max_unit, step_size))
                made[rc_id] = found
        return {rc_id: made[rc_id] for rc_id in rc_ids}

    def _holders(self, rc_ids):
        """The holders of at least the classes ``rc_ids``: {rc id:
        {provider id: (root id, capacity, min_unit, max_unit,
        step_size)}}, indexing those not indexed yet in one pass."""
        holders = self._holders_by_class
        missing = {rc_id: {} for rc_id in rc_ids if rc_id not in holders}
        if missing:
            _index(self.providers, missing)
            holders.update(missing)
        return holders

    def patched(self, state, usage, place):
        """This read of the whole cloud brought up to ``state`` and
        ``usage`` (the _Lines just read): the providers whose state line is
        new are placed with ``place(rows)`` (see Snapshot._places), those
        whose line is gone are dropped, and every other provider stays as
        it was, with its holdings; usage is patched by the allocation lines
        gone and new. In a cloud taking claims, each claim changes the
        lines of the few providers and allocations it touches, so a patch
        costs little more than comparing the lines; in a cloud at rest,
        only comparing the two texts."""
        gone_lines, new_lines = state.changes_since(self.state)
        gone_usage, new_usage = usage.changes_since(self.usage)
        if not (gone_lines or new_lines or gone_usage or new_usage):
            return self
        # With the same providers, the same holders serve.
        providers = self.providers
        holders = self._holders_by_class
        if gone_lines or new_lines:
            gone = {int(line.split(' ', 1)[0]) for line in gone_lines}
            providers = dict(providers)
            for provider_id in gone:
                providers.pop(provider_id, None)
            placed = (place(sorted(map(_state_row, new_lines)))
                      if new_lines else {})
            providers.update(placed)
            patched_holders = {}
            # A copy: another thread may be indexing a class of this read.
            for rc_id, held in list(holders.items()):
                held = patched_holders[rc_id] = dict(held)
                for provider_id in gone:
                    held.pop(provider_id, None)
            _index(placed, patched_holders)
            holders = patched_holders
        used = self.used
        if gone_usage or new_usage:
            used = _patched_usage(used, gone_usage, new_usage)
        return _Read(providers, used, holders, state, usage)


def _nothing_read():
    """What the first whole-cloud read of a process patches."""
    return _Read({}, {}, state=_Lines(''), usage=_Lines(''))


def _state_row(line):
    """(id, parent id, root id, generation, identity) from a state line;
    an empty identity (SQLite: no creation time) is None."""
    id_, parent_id, root_id, generation, identity = line.split(' ', 4)
    return (int(id_), int(parent_id) if parent_id else None, int(root_id),
            int(generation), identity or None)


def _patched_usage(used, gone_lines, new_lines):
    """``used`` ({provider id: {rc id: amount}}) less the allocation lines
    gone, plus those new; a new dict, sharing the unchanged providers'."""
    used = dict(used)
    changed = {}
    for lines, sign in ((gone_lines, -1), (new_lines, 1)):
        for line in lines:
            _id, provider_id, rc_id, amount = map(int, line.split(' '))
            if provider_id not in changed:
                changed[provider_id] = dict(used.get(provider_id, ()))
            classes = changed[provider_id]
            classes[rc_id] = classes.get(rc_id, 0) + sign * amount
    for provider_id, classes in changed.items():
        classes = {rc_id: amount for rc_id, amount in classes.items()
                   if amount}
        if classes:
            used[provider_id] = classes
        else:
            used.pop(provider_id, None)
    return used


def _index(places, holders):
    """Add to ``holders`` ({rc id: {provider id: (root id, capacity,
    min_unit, max_unit, step_size)}}) what the providers ``places`` ({id:
    (parent id, root id, _Stock)}) hold of those classes."""
    for provider_id, (_parent, root_id, stock) in places.items():
        for rc_id, capacity, min_unit, max_unit, step_size in stock[3]:
            held = holders.get(rc_id)
            if held is not None:
                held[provider_id] = (root_id, capacity, min_unit, max_unit,
                                     step_size)


class _Scope(typing.NamedTuple):
    """Which providers a read covers: those of the tree ``:root_id``
    (``by_root``), of the window of trees ``:first``..``:last`` (inclusive
    root ids; ``by_window``) widened to the providers ``:also_ids``
    (``with_also``), of the trees ``:roots`` (``by_roots``); of those, only
    providers with an inventory of the classes ``:rc_ids``
    (``of_classes``). None of them: the whole cloud."""

    by_root: bool = False
    by_window: bool = False
    with_also: bool = False
    by_roots: bool = False
    of_classes: bool = False

    def conditions(self, providers):
        """The scope as conditions on the ``providers`` table."""
        root = providers.c.root_provider_id
        conditions = []
        if self.by_root:
            conditions.append(root == sa.bindparam('root_id'))
        if self.by_window:
            in_window = root.between(sa.bindparam('first'),
                                     sa.bindparam('last'))
            if self.with_also:
                also = providers.c.id.in_(candidates.list_param('also_ids'))
                in_window = sa.or_(in_window, also)
            conditions.append(in_window)
        if self.by_roots:
            conditions.append(root.in_(candidates.list_param('roots')))
        if self.of_classes:
            conditions.append(providers.c.id.in_(
                sa.select(inv.c.resource_provider_id).where(
                    inv.c.resource_class_id.in_(
                        candidates.list_param('rc_ids')))))
        return conditions

    def of_providers(self, query, provider_id):
        """``query`` restricted to rows whose ``provider_id`` is in the
        scope."""
        if self == _WHOLE_CLOUD:
            return query
        return query.where(provider_id.in_(
            sa.select(in_scope_rp.c.id).where(
                *self.conditions(in_scope_rp))))


_WHOLE_CLOUD = _Scope()


class _ScopeQueries(typing.NamedTuple):
    """The statements reading one scope: place and version with usage, on
    every read; uuids, inventories and traits for stale stocks."""

    #: Rows (id, parent id, root id, generation, identity, None, None) for
    #: the providers, then (provider id, None, None, None, None, rc id,
    #: amount used) for their usage.
    places_and_usage: object
    uuids: object
    inventories: object
    traits: object


#: What tells a provider from an earlier one with the same id, where ids
#: are never reused: every provider has the same. (Not empty: in a state
#: line, an empty identity stands for a missing creation time.)
_ONE_IDENTITY = '*'


def _identity(ids_reused):
    if ids_reused:
        # Text: cheaper to read than a datetime, as good to compare.
        return sa.cast(rp.c.created_at, sa.Text)
    # Reading the creation time costs a third of the whole read.
    return sa.literal(_ONE_IDENTITY, sa.Text)


def _line(*columns):
    """``columns`` as one line of text: the values separated by spaces,
    NULL as an empty value."""
    line = None
    for column in columns:
        value = sa.func.coalesce(sa.cast(column, sa.Text), '')
        line = value if line is None else line.concat(' ').concat(value)
    return line


def _text_lines(*columns):
    """An aggregate of ``columns`` as text: one line per row (see _line).
    (Comparing one text with the last read is far cheaper than making and
    comparing a tuple per row.)"""
    return sa.select(sa.func.aggregate_strings(_line(*columns), '\n')
                     ).scalar_subquery()


def _cloud_columns(ids_reused):
    return ((rp.c.id, rp.c.parent_provider_id, rp.c.root_provider_id,
             rp.c.generation, _identity(ids_reused)),
            (alloc.c.id, alloc.c.resource_provider_id,
             alloc.c.resource_class_id, alloc.c.used))


@functools.cache
def _cloud_query(ids_reused):
    """The state of every provider and every allocation, as two text
    values (see _Lines)."""
    state, usage = _cloud_columns(ids_reused)
    return sa.select(_text_lines(*state), _text_lines(*usage))


@functools.cache
def _mysql_cloud_queries(ids_reused):
    """MySQL/MariaDB: the lines of _cloud_query, one row each. GROUP_CONCAT
    silently cuts its result at max_allowed_packet (16 MiB by default),
    which a large cloud's allocations exceed."""
    return tuple(sa.select(_line(*columns))
                 for columns in _cloud_columns(ids_reused))


def _mysql_cloud_texts(conn, ids_reused):
    return tuple('\n'.join(row[0] for row in _rows(conn, query, {}))
                 for query in _mysql_cloud_queries(ids_reused))


@functools.cache
def _scope_queries(scope, ids_reused):
    no_integer = sa.cast(sa.null(), sa.Integer)
    state = sa.select(rp.c.id, rp.c.parent_provider_id,
                      rp.c.root_provider_id, rp.c.generation,
                      _identity(ids_reused), no_integer, no_integer)
    usage = (sa.select(alloc.c.resource_provider_id, no_integer, no_integer,
                       no_integer, sa.cast(sa.null(), sa.Text),
                       alloc.c.resource_class_id, sa.func.sum(alloc.c.used))
             .group_by(alloc.c.resource_provider_id,
                       alloc.c.resource_class_id))
    uuids = sa.select(rp.c.id, rp.c.uuid)
    inventories = (
        sa.select(inv.c.resource_provider_id, inv.c.resource_class_id,
                  inv.c.total, inv.c.reserved, inv.c.allocation_ratio,
                  inv.c.min_unit, inv.c.max_unit, inv.c.step_size)
        .order_by(inv.c.resource_class_id))
    trait_names = (
        sa.select(rpt.c.resource_provider_id, traits.c.name)
        .select_from(rpt.join(traits, traits.c.id == rpt.c.trait_id))
        .order_by(rpt.c.trait_id))
    return _ScopeQueries(
        sa.union_all(state.where(*scope.conditions(rp)),
                     scope.of_providers(usage, alloc.c.resource_provider_id)),
        uuids.where(*scope.conditions(rp)),
        scope.of_providers(inventories, inv.c.resource_provider_id),
        scope.of_providers(trait_names, rpt.c.resource_provider_id))


_ROOT_COUNT = sa.select(sa.func.count()).select_from(rp).where(
    rp.c.parent_provider_id.is_(None))


def _trees_scope(conn, root_ids):
    """The scope and parameters reading the trees ``root_ids``: when they
    are half the cloud or more, the whole cloud (filtering by root then
    costs more than reading the others)."""
    if (len(root_ids) >= _FEW_TREES
            and 2 * len(root_ids) >= conn.execute(_ROOT_COUNT).scalar()):
        return _WHOLE_CLOUD, {}
    return _Scope(by_roots=True), {'roots': sorted(root_ids)}


class Snapshot:
    """The providers one request has read: where each is, what it has
    (its stock) and what it uses."""

    def __init__(self, conn, class_names):
        """``class_names`` maps every resource class id to its name."""
        self.conn = conn
        self.class_names = class_names
        self._kept = _STOCK.setdefault(conn.engine, {})
        self._shown = _SHOWN.setdefault(conn.engine, {})
        self._ids_reused = conn.dialect.name != 'postgresql'
        #: {provider id: (parent id, root id, _Stock)} of every provider
        #: read.
        self._providers = {}
        #: {provider id: {rc id: amount used}}; no entry: nothing used.
        self._used = {}
        #: Trees read whole: every tree (the _Read of the whole cloud, once
        #: read; windows may be cut from it), or those of these windows and
        #: roots.
        self._cloud = None
        self._windows = []
        self._trees = set()
        #: {frozenset of rc ids: whether few providers of a window read
        #: whole had an inventory of them}.
        self._rare_classes = {}

    def capacities(self, rc_ids, root_id=None, window=None, also_ids=(),
                   cut_from_cloud=False):
        """{rc id: {provider id: Capacity}} for every inventory of
        ``rc_ids``, reading the providers of the whole cloud, or with
        ``root_id`` those of that tree, or with ``window`` (an inclusive
        range of root ids) those of those trees and ``also_ids``: the cost
        is then bounded by the window.

        With ``cut_from_cloud`` a window (without ``root_id``) is cut out
        of a read of the whole cloud: the better deal when it holds most
        trees, as the last whole-cloud read is kept between requests and
        a window's is not.

        Once a window read whole has shown that fewer than a quarter of
        its providers have an inventory of ``rc_ids``, later windows read
        only those that have one, even with ``cut_from_cloud``: few of
        their trees can be shown, and those are read again when they are.

        The dicts returned may be shared with other requests: never change
        them."""
        if not rc_ids:
            return {}
        windowed = window is not None and root_id is None
        classes = frozenset(rc_ids)
        only_classes = windowed and self._rare_classes.get(classes, False)
        if windowed and cut_from_cloud and not only_classes:
            return self._cut_from_cloud(rc_ids, window, also_ids)
        scope = _Scope(by_root=root_id is not None,
                       by_window=window is not None,
                       with_also=window is not None and bool(also_ids),
                       of_classes=only_classes)
        params = {'root_id': root_id, 'rc_ids': sorted(rc_ids)}
        if window is not None:
            params.update(first=window[0], last=window[1])
        if scope.with_also:
            params['also_ids'] = sorted(also_ids)
        read = self._read(scope, params)
        if not only_classes:
            self._cover(root_id, window)
        found = read.capacities(rc_ids)
        if windowed and not only_classes:
            holding = set().union(*found.values())
            self._rare_classes[classes] = (
                4 * len(holding) < len(read.providers))
        return found

    def _cut_from_cloud(self, rc_ids, window, also_ids):
        if self._cloud is None:
            self._read(_WHOLE_CLOUD, {})
        first, last = window
        return {rc_id: {provider_id: capacity
                        for provider_id, capacity in held.items()
                        if first <= capacity.root_id <= last
                        or provider_id in also_ids}
                for rc_id, held in self._cloud.capacities(rc_ids).items()}

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
        for provider_id, (parent_id, root_id, stock) in sorted(
                self._of_trees(root_ids)):
            parent = None if parent_id is None else providers[parent_id][2]
            root = providers[root_id][2]
            used = used_of.get(provider_id, _NO_USAGE)
            last = shown.get(provider_id)
            if (last is not None and last[0] is stock and last[1] is parent
                    and last[2] is root
                    and (last[3] is used or last[3] == used)):
                summaries[provider_id] = last[4]
            else:
                summaries[provider_id] = self._summary(
                    provider_id, stock, parent, root, used)
        return summaries

    def _summary(self, provider_id, stock, parent, root, used):
        """The ProviderSummary of a provider, kept for the next request."""
        class_names = self.class_names
        summary = ProviderSummary(
            stock.uuid, None if parent is None else parent.uuid, root.uuid,
            {class_names[rc_id]: {'capacity': capacity,
                                  'used': used.get(rc_id, 0)}
             for rc_id, capacity, _min, _max, _step in stock.inventories},
            stock.trait_names)
        shown = self._shown
        if len(shown) >= _STOCK_LIMIT:
            shown.clear()
        shown[provider_id] = (stock, parent, root, used, summary)
        return summary

    def _of_trees(self, root_ids):
        """(provider id, (parent id, root id, _Stock)) for every provider
        of the trees ``root_ids``, read first where not read yet."""
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
        elif window[0] <= root_id <= window[1]:
            self._trees.add(root_id)

    def _covers(self, root_id):
        return (self._cloud is not None or root_id in self._trees
                or any(first <= root_id <= last
                       for first, last in self._windows))

    def _read_trees(self, root_ids):
        """Read every provider of the trees ``root_ids`` not read yet."""
        missing = {root_id for root_id in root_ids
                   if not self._covers(root_id)}
        if not missing:
            return
        scope, params = _trees_scope(self.conn, missing)
        self._read(scope, params)
        if scope != _WHOLE_CLOUD:
            self._trees.update(missing)

    def _read(self, scope, params):
        """Read the place, stock and usage of the providers in ``scope``;
        returns their _Read."""
        conn = self.conn
        if scope == _WHOLE_CLOUD:
            read = self._cloud = self._read_cloud()
        else:
            queries = _scope_queries(scope, self._ids_reused)
            state = []
            used = {}
            for row in _rows(conn, queries.places_and_usage, params):
                rc_id = row[5]
                if rc_id is None:
                    state.append(row[:5])
                elif row[0] in used:
                    used[row[0]][rc_id] = row[6]
                else:
                    used[row[0]] = {rc_id: row[6]}
            read = _Read(self._places(state), used)
        self._providers.update(read.providers)
        used = self._used
        if used:
            for id_ in read.providers:
                used.pop(id_, None)
        used.update(read.used)
        return read

    def _read_cloud(self):
        """The _Read of the whole cloud: the last one made in this process,
        patched (see _Read.patched)."""
        conn = self.conn
        if conn.dialect.name == 'mysql':
            state, usage = _mysql_cloud_texts(conn, self._ids_reused)
        else:
            state, usage = conn.execute(_cloud_query(self._ids_reused)).one()
        state, usage = _Lines(state), _Lines(usage)
        last = _LAST_CLOUD.get(conn.engine) or _nothing_read()
        read = _LAST_CLOUD[conn.engine] = last.patched(state, usage,
                                                       self._places)
        return read

    def _places(self, rows):
        """{provider id: (parent id, root id, _Stock)} for the state
        ``rows`` just read, reading the stocks not kept."""
        kept = self._kept
        places = {}
        # {provider id: (parent id, root id, generation, identity)} of
        # those whose stock must be read.
        stale = {}
        for id_, parent_id, root_id, generation, identity in rows:
            stock = kept.get(id_)
            if (stock is not None and stock[0] == generation
                    and stock[1] == identity):
                places[id_] = (parent_id, root_id, stock)
            else:
                stale[id_] = (parent_id, root_id, generation, identity)
        if stale:
            fresh = self._read_stocks(stale)
            places.update((id_, stale[id_][:2] + (stock,))
                          for id_, stock in fresh.items())
            # A provider deleted since its place was read is gone.
            for id_ in stale.keys() - fresh.keys():
                self._providers.pop(id_, None)
        return places

    def _read_stocks(self, stale):
        """Fresh _Stock for ``stale`` ({provider id: (parent id, root id,
        generation, identity)} as just read), read with the trees they
        are in, and kept; none for a provider deleted since."""
        conn = self.conn
        scope, params = _trees_scope(
            conn, {root_id for _parent, root_id, _g, _c in stale.values()})
        queries = _scope_queries(scope, self._ids_reused)
        uuids = {id_: uuid for id_, uuid in _rows(conn, queries.uuids, params)
                 if id_ in stale}
        inventories = collections.defaultdict(list)
        for (provider_id, rc_id, total, reserved, ratio, min_unit, max_unit,
             step_size) in _rows(conn, queries.inventories, params):
            if provider_id in stale:
                inventories[provider_id].append(
                    (rc_id, int((total - reserved) * ratio), min_unit,
                     max_unit, step_size))
        names = collections.defaultdict(list)
        for provider_id, name in _rows(conn, queries.traits, params):
            if provider_id in stale:
                names[provider_id].append(name)
        fresh = {id_: _Stock(generation, identity, uuids[id_],
                             tuple(inventories[id_]), tuple(names[id_]))
                 for id_, (_parent, _root, generation, identity)
                 in stale.items() if id_ in uuids}
        kept = self._kept
        if len(kept) + len(fresh) > _STOCK_LIMIT:
            kept.clear()
        kept.update((id_, stock) for id_, stock in fresh.items()
                    if stock.identity is not None)
        return fresh
