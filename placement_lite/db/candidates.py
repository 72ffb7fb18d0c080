"""The queries behind GET /allocation_candidates.

Each function is one set-based query (or two) returning plain Python
values; the engine (``placement_lite.engine``) combines them. Filters that
SQL does well (capacity, traits, aggregates, trees) are done here; tree
assembly and combination are done by the engine.
"""

import collections
import dataclasses
import functools
import typing
import weakref

import sqlalchemy as sa

from placement_lite.db import tables

rp = tables.resource_providers
inv = tables.inventories
alloc = tables.allocations
rpt = tables.resource_provider_traits
rpa = tables.resource_provider_aggregates
aggs = tables.placement_aggregates
traits = tables.traits
rc = tables.resource_classes

SHARING_TRAIT = 'MISC_SHARES_VIA_AGGREGATE'

# Aliases are built once: building one, and its columns, on every query
# costs more than running the small queries that use it.
in_scope_rp = rp.alias('in_scope')
mine_rpa = rpa.alias('mine')
theirs_rpa = rpa.alias('theirs')


@functools.cache
def _nth_alias(table, n):
    """The ``n``th alias of ``table`` in one query (one per EXISTS)."""
    return table.alias('%s_%d' % (table.name, n))


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


def _list_param(name):
    return sa.bindparam(name, expanding=True)


def _in_scope(providers, by_root, by_window, with_also):
    """Conditions on the ``providers`` table: in the tree ``:root_id``
    and/or the window of trees ``:first``..``:last`` (inclusive root ids),
    the window widened to the providers ``:also_ids``."""
    root = providers.c.root_provider_id
    conditions = []
    if by_root:
        conditions.append(root == sa.bindparam('root_id'))
    if by_window:
        in_window = root.between(sa.bindparam('first'), sa.bindparam('last'))
        if with_also:
            in_window = sa.or_(in_window,
                               providers.c.id.in_(_list_param('also_ids')))
        conditions.append(in_window)
    return conditions


def _usage_query(in_scope, of_classes=False):
    """The amount used per provider and class, for the providers that
    ``in_scope`` (conditions on ``in_scope_rp``; none: every provider)
    selects, of the classes ``:rc_ids`` when ``of_classes``."""
    query = (sa.select(alloc.c.resource_provider_id,
                       alloc.c.resource_class_id,
                       sa.func.sum(alloc.c.used).label('used'))
             .group_by(alloc.c.resource_provider_id,
                       alloc.c.resource_class_id))
    if of_classes:
        query = query.where(
            alloc.c.resource_class_id.in_(_list_param('rc_ids')))
    if in_scope:
        query = query.where(alloc.c.resource_provider_id.in_(
            sa.select(in_scope_rp.c.id).where(*in_scope)))
    return query


def _rows(conn, query, params):
    """Every row of ``query`` as a plain tuple, read straight from the
    database driver: for the large reads, where building SQLAlchemy's Row
    objects costs more than it gives."""
    result = conn.execute(query, params)
    try:
        return result.cursor.fetchall()
    finally:
        result.close()


# Statements are built once (per shape) and run with parameters: building
# and keying a statement costs more than running the small ones.

@functools.cache
def _capacities_query(by_root, by_window, with_also):
    usage = _usage_query(
        _in_scope(in_scope_rp, by_root, by_window, with_also),
        of_classes=True).subquery('usage')
    return (
        sa.select(inv.c.resource_class_id, rp.c.id, rp.c.root_provider_id,
                  inv.c.total, inv.c.reserved, inv.c.allocation_ratio,
                  sa.func.coalesce(usage.c.used, 0), inv.c.min_unit,
                  inv.c.max_unit, inv.c.step_size)
        .select_from(
            rp.join(inv, inv.c.resource_provider_id == rp.c.id)
            .outerjoin(usage, sa.and_(
                usage.c.resource_provider_id == inv.c.resource_provider_id,
                usage.c.resource_class_id == inv.c.resource_class_id)))
        .where(inv.c.resource_class_id.in_(_list_param('rc_ids')),
               *_in_scope(rp, by_root, by_window, with_also)))


def capacities(conn, rc_ids, root_id=None, window=None, also_ids=()):
    """{rc id: {provider id: Capacity}} for every inventory of ``rc_ids``,
    in one query. With ``root_id``, only providers of that tree; with
    ``window`` (an inclusive range of root ids), only providers of those
    trees and ``also_ids``: the cost is then bounded by the window."""
    found = {rc_id: {} for rc_id in rc_ids}
    if not rc_ids:
        return found
    with_also = window is not None and bool(also_ids)
    query = _capacities_query(root_id is not None, window is not None,
                              with_also)
    params = {'rc_ids': sorted(rc_ids), 'root_id': root_id}
    if window is not None:
        params.update(first=window[0], last=window[1])
    if with_also:
        params['also_ids'] = sorted(also_ids)
    for (rc_id, id_, root, total, reserved, ratio, used, min_unit, max_unit,
         step_size) in _rows(conn, query, params):
        found[rc_id][id_] = Capacity(root, int((total - reserved) * ratio),
                                     used, min_unit, max_unit, step_size)
    return found


_ROOTS = sa.select(rp.c.id).where(rp.c.parent_provider_id.is_(None))
_FIRST_ROOTS = _ROOTS.order_by(rp.c.id).limit(sa.bindparam('count'))
_ROOTS_AFTER = (_ROOTS.where(rp.c.id > sa.bindparam('after_id'))
                .order_by(rp.c.id).limit(sa.bindparam('count')))


def root_window(conn, after_id, count):
    """(first, last, is_final) for the next ``count`` trees in creation
    order after root ``after_id`` (None: from the start): their first and
    last root ids, and whether no tree comes after them. None when there
    are no more trees."""
    query = _FIRST_ROOTS if after_id is None else _ROOTS_AFTER
    ids = conn.execute(query, {'after_id': after_id,
                               'count': count}).scalars().all()
    return (ids[0], ids[-1], len(ids) < count) if ids else None


@functools.cache
def _linked_to_each_set_query(link_table, column, sets):
    """Providers with, for each of the ``sets`` parameters ``:set_<n>``, a
    row of ``link_table`` (provider traits or aggregates) whose ``column``
    is in it."""
    query = sa.select(rp.c.id)
    for n in range(sets):
        link = _nth_alias(link_table, n)
        query = query.where(sa.exists().where(
            link.c.resource_provider_id == rp.c.id,
            link.c[column].in_(_list_param('set_%d' % n))))
    return query


def _providers_linked_to_each(conn, link_table, column, id_sets):
    """Ids of providers linked in ``link_table`` to at least one id of
    each set in ``id_sets``."""
    query = _linked_to_each_set_query(link_table, column, len(id_sets))
    params = {'set_%d' % n: sorted(ids) for n, ids in enumerate(id_sets)}
    return set(conn.execute(query, params).scalars().all())


@functools.cache
def _linked_to_any_query(link_table, column):
    return (sa.select(link_table.c.resource_provider_id).distinct()
            .where(link_table.c[column].in_(_list_param('ids'))))


def _providers_linked_to_any(conn, link_table, column, ids):
    """Ids of providers linked in ``link_table`` to any of ``ids``."""
    return set(conn.execute(_linked_to_any_query(link_table, column),
                            {'ids': sorted(ids)}).scalars().all())


def provider_ids_with_traits(conn, required):
    """Ids of providers having, for each set of trait ids in ``required``,
    at least one of them."""
    return _providers_linked_to_each(conn, rpt, 'trait_id', required)


def provider_ids_with_any_trait(conn, trait_ids):
    if not trait_ids:
        return set()
    return _providers_linked_to_any(conn, rpt, 'trait_id', trait_ids)


_TRAITS_AMONG = sa.select(rpt.c.resource_provider_id, rpt.c.trait_id).where(
    rpt.c.trait_id.in_(_list_param('trait_ids')))


def traits_of_providers_among(conn, trait_ids):
    """{provider id: set of trait ids} restricted to ``trait_ids``."""
    found = collections.defaultdict(set)
    if not trait_ids:
        return found
    for provider_id, trait_id in conn.execute(
            _TRAITS_AMONG, {'trait_ids': sorted(trait_ids)}).all():
        found[provider_id].add(trait_id)
    return found


_AGGREGATE_IDS = sa.select(aggs.c.uuid, aggs.c.id).where(
    aggs.c.uuid.in_(_list_param('uuids')))


def aggregate_ids(conn, uuids):
    """{uuid: id} for the aggregates among ``uuids`` that exist."""
    if not uuids:
        return {}
    return dict(conn.execute(_AGGREGATE_IDS,
                             {'uuids': sorted(uuids)}).all())


def provider_ids_in_aggregates(conn, member_of):
    """Ids of providers that are, for each set of aggregate uuids in
    ``member_of``, in at least one of them."""
    known = aggregate_ids(conn, set().union(*member_of))
    id_sets = [{known[uuid] for uuid in alternatives if uuid in known}
               for alternatives in member_of]
    if not all(id_sets):
        return set()
    return _providers_linked_to_each(conn, rpa, 'aggregate_id', id_sets)


def provider_ids_in_any_aggregate(conn, uuids):
    known = aggregate_ids(conn, uuids)
    if not known:
        return set()
    return _providers_linked_to_any(conn, rpa, 'aggregate_id',
                                    known.values())


_SHARING_PROVIDERS = (
    sa.select(rpt.c.resource_provider_id)
    .select_from(rpt.join(traits, traits.c.id == rpt.c.trait_id))
    .where(traits.c.name == SHARING_TRAIT))


def sharing_provider_ids(conn):
    """Providers that share their inventory with their aggregates."""
    return set(conn.execute(_SHARING_PROVIDERS).scalars().all())


_ANCHORS_OF_SHARING = (
    sa.select(mine_rpa.c.resource_provider_id, rp.c.root_provider_id)
    .distinct()
    .select_from(
        mine_rpa.join(theirs_rpa,
                      theirs_rpa.c.aggregate_id == mine_rpa.c.aggregate_id)
        .join(rp, rp.c.id == theirs_rpa.c.resource_provider_id))
    .where(mine_rpa.c.resource_provider_id.in_(_list_param('sharing_ids'))))
_ANCHORS_OF_SHARING_IN_WINDOW = _ANCHORS_OF_SHARING.where(
    rp.c.root_provider_id.between(sa.bindparam('first'), sa.bindparam('last')))


def anchors_for_sharing(conn, sharing_ids, window=None):
    """{sharing provider id: root ids of the trees it serves}: the roots of
    every provider sharing an aggregate with it (its own root included when
    it is in any aggregate); only roots in ``window`` (an inclusive range
    of root ids) when given."""
    anchors = collections.defaultdict(set)
    if not sharing_ids:
        return anchors
    params = {'sharing_ids': sorted(sharing_ids)}
    if window is None:
        query = _ANCHORS_OF_SHARING
    else:
        query = _ANCHORS_OF_SHARING_IN_WINDOW
        params.update(first=window[0], last=window[1])
    for sharing_id, root_id in conn.execute(query, params).all():
        anchors[sharing_id].add(root_id)
    return anchors


@functools.cache
def _roots_with_traits_query(required, with_forbidden):
    query = _ROOTS
    for n in range(required):
        has = _nth_alias(rpt, n)
        query = query.where(sa.exists().where(
            has.c.resource_provider_id == rp.c.id,
            has.c.trait_id == sa.bindparam('trait_%d' % n)))
    if with_forbidden:
        query = query.where(~sa.exists().where(
            rpt.c.resource_provider_id == rp.c.id,
            rpt.c.trait_id.in_(_list_param('forbidden_ids'))))
    return query


def roots_with_traits(conn, required_ids, forbidden_ids):
    """Ids of root providers having all ``required_ids`` and none of
    ``forbidden_ids``."""
    params = {'trait_%d' % n: trait_id
              for n, trait_id in enumerate(sorted(required_ids))}
    if forbidden_ids:
        params['forbidden_ids'] = sorted(forbidden_ids)
    query = _roots_with_traits_query(len(required_ids), bool(forbidden_ids))
    return set(conn.execute(query, params).scalars().all())


_TREE_OF = sa.select(rp.c.id, rp.c.root_provider_id).where(
    rp.c.uuid == sa.bindparam('uuid'))


def tree_of(conn, uuid):
    """(provider id, root id) for the provider ``uuid``, or None."""
    row = conn.execute(_TREE_OF, {'uuid': uuid}).first()
    return tuple(row) if row else None


_ANY_CHILD = sa.select(rp.c.id).where(
    rp.c.parent_provider_id.isnot(None)).limit(1)


def has_provider_trees(conn):
    """Whether any provider has a parent (the reference's switch for the
    legacy, tree-unaware microversions)."""
    return conn.execute(_ANY_CHILD).first() is not None


_ALL_ROOTS = sa.select(rp.c.id, rp.c.root_provider_id)


def providers_except(conn, excluded_ids):
    """{id: root id} of every provider not in ``excluded_ids``."""
    return {id_: root for id_, root in conn.execute(_ALL_ROOTS)
            if id_ not in excluded_ids}


_ROOTS_OF = _ALL_ROOTS.where(rp.c.id.in_(_list_param('ids')))


def roots_of(conn, provider_ids):
    """{provider id: root id} for ``provider_ids``."""
    if not provider_ids:
        return {}
    return dict(conn.execute(_ROOTS_OF,
                             {'ids': sorted(provider_ids)}).all())


@dataclasses.dataclass
class TreeSummaries:
    """Every provider of some trees, as provider summaries show them."""

    #: {provider id: (uuid, parent uuid, root uuid)}, in provider id order.
    identities: dict
    #: {provider id: {resource class name: {'capacity': capacity,
    #: 'used': used}}}, classes in id order; providers without inventory
    #: are left out.
    resources: dict
    #: {provider id: (trait names)} in trait id order (standard traits
    #: first, then custom ones as created), the order the reference shows;
    #: providers without traits are left out.
    traits: dict


class _SummaryQueries(typing.NamedTuple):
    """The statements behind provider summaries, for one scope: identities
    and usage run on every call; inventories and traits for stale stocks."""

    identities: object
    usage: object
    inventories: object
    traits: object


@functools.cache
def _summary_queries(whole_cloud):
    """The _SummaryQueries for the trees ``:roots`` (every tree when
    ``whole_cloud``)."""
    in_trees = ([] if whole_cloud else
                [in_scope_rp.c.root_provider_id.in_(_list_param('roots'))])

    def of_trees(query, provider_id):
        if whole_cloud:
            return query
        return query.where(provider_id.in_(
            sa.select(in_scope_rp.c.id).where(*in_trees)))

    identities = of_trees(
        sa.select(rp.c.id, rp.c.uuid, rp.c.parent_provider_id,
                  rp.c.root_provider_id, rp.c.generation,
                  # Text: cheaper to read than a datetime, as good to compare.
                  sa.cast(rp.c.created_at, sa.Text)),
        rp.c.id).order_by(rp.c.id)
    inventories = of_trees(
        sa.select(inv.c.resource_provider_id, inv.c.resource_class_id,
                  inv.c.total, inv.c.reserved, inv.c.allocation_ratio),
        inv.c.resource_provider_id).order_by(inv.c.resource_class_id)
    trait_names = of_trees(
        sa.select(rpt.c.resource_provider_id, traits.c.name)
        .select_from(rpt.join(traits, traits.c.id == rpt.c.trait_id)),
        rpt.c.resource_provider_id).order_by(rpt.c.trait_id)
    return _SummaryQueries(identities, _usage_query(in_trees), inventories,
                           trait_names)


#: Fewer trees than this are always read by root.
_FEW_TREES = 64


class _Stock(typing.NamedTuple):
    """What a provider has, as of one generation: its capacity per class
    (class id order) and its trait names (trait id order).

    Hot loops read the first two fields by index: attribute access on a
    named tuple costs more than the comparison."""

    generation: int
    created_at: object
    capacities: tuple
    trait_names: tuple


#: {engine: {provider id: _Stock}}, per process.
_STOCK = weakref.WeakKeyDictionary()
#: A process forgets every stock it keeps beyond this many providers
#: (deleted providers are never looked up again).
_STOCK_LIMIT = 200_000


def providers_of_trees(conn, root_ids, class_names):
    """The TreeSummaries of every provider of the trees rooted at
    ``root_ids``: identities, inventories with usage, and traits
    (``class_names`` maps every resource class id to its name).

    Identities and usage are read on every call. Inventories and traits
    are kept per process between calls, for each provider as of its
    generation: every change to them bumps the generation in the same
    transaction, so a kept stock is good while the generation read here
    (before the stock) is unchanged. The creation time tells a provider
    from a later one given the same id (SQLite reuses ids); a provider
    without one is read every time.

    When the trees are half the cloud or more, every provider is read and
    those of other trees are dropped here: filtering by root then costs
    more than reading them."""
    if not root_ids:
        return TreeSummaries({}, {}, {})
    queries, params = _summary_statements(conn, root_ids)

    rows = _rows(conn, queries.identities, params)
    uuid_of = {row[0]: row[1] for row in rows}
    kept = _STOCK.setdefault(conn.engine, {})
    identities = {}
    stocks = {}
    # {provider id: (generation, created_at, root id)} of those to read.
    stale = {}
    for id_, uuid, parent_id, root_id, generation, created_at in rows:
        if root_id in root_ids:
            identities[id_] = (uuid, uuid_of.get(parent_id), uuid_of[root_id])
            stock = kept.get(id_)
            if (stock is not None and stock[0] == generation
                    and stock[1] == created_at):
                stocks[id_] = stock
            else:
                stale[id_] = (generation, created_at, root_id)
    if stale:
        stocks.update(_read_stocks(conn, stale, kept))

    used = collections.defaultdict(dict)
    for provider_id, rc_id, amount in _rows(conn, queries.usage, params):
        used[provider_id][rc_id] = amount
    no_usage = {}
    resources = {}
    trait_names = {}
    for provider_id, stock in stocks.items():
        if stock.capacities:
            usage = used.get(provider_id, no_usage)
            resources[provider_id] = {
                class_names[rc_id]: {'capacity': capacity,
                                     'used': usage.get(rc_id, 0)}
                for rc_id, capacity in stock.capacities}
        if stock.trait_names:
            trait_names[provider_id] = stock.trait_names
    return TreeSummaries(identities, resources, trait_names)


def _summary_statements(conn, root_ids):
    """The _summary_queries for the trees ``root_ids``, and their
    parameters."""
    whole_cloud = (len(root_ids) >= _FEW_TREES
                   and 2 * len(root_ids) >= _root_count(conn))
    params = {} if whole_cloud else {'roots': sorted(root_ids)}
    return _summary_queries(whole_cloud), params


def _read_stocks(conn, stale, kept):
    """Fresh _Stock for ``stale`` ({provider id: (generation, created_at,
    root id)} as just read), read with the trees they are in and kept."""
    root_ids = {root_id for _g, _c, root_id in stale.values()}
    queries, params = _summary_statements(conn, root_ids)
    capacities = collections.defaultdict(list)
    for provider_id, rc_id, total, reserved, ratio in _rows(
            conn, queries.inventories, params):
        if provider_id in stale:
            capacities[provider_id].append(
                (rc_id, int((total - reserved) * ratio)))
    names = collections.defaultdict(list)
    for provider_id, name in _rows(conn, queries.traits, params):
        if provider_id in stale:
            names[provider_id].append(name)
    fresh = {provider_id: _Stock(generation, created_at,
                                 tuple(capacities[provider_id]),
                                 tuple(names[provider_id]))
             for provider_id, (generation, created_at, _root)
             in stale.items()}
    if len(kept) + len(fresh) > _STOCK_LIMIT:
        kept.clear()
    kept.update((provider_id, stock) for provider_id, stock in fresh.items()
                if stock.created_at is not None)
    return fresh


_ROOT_COUNT = sa.select(sa.func.count()).select_from(rp).where(
    rp.c.parent_provider_id.is_(None))


def _root_count(conn):
    return conn.execute(_ROOT_COUNT).scalar()


_PARENTS_IN_TREES = sa.select(rp.c.id, rp.c.parent_provider_id).where(
    rp.c.root_provider_id.in_(_list_param('roots')))


def parents_in_trees(conn, root_ids):
    """{provider id: parent id} for every provider of the given trees."""
    if not root_ids:
        return {}
    return dict(conn.execute(_PARENTS_IN_TREES,
                             {'roots': sorted(root_ids)}).all())


_UUIDS = sa.select(rp.c.id, rp.c.uuid).where(rp.c.id.in_(_list_param('ids')))


def provider_uuids(conn, provider_ids):
    if not provider_ids:
        return {}
    return dict(conn.execute(_UUIDS, {'ids': sorted(provider_ids)}).all())
