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

import sqlalchemy as sa

from placement_lite.db import lookups
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

    def can_give(self, amount):
        """Whether ``amount`` fits now: free capacity, min_unit, max_unit
        and step_size allow it."""
        return (amount <= self.free
                and self.min_unit <= amount <= self.max_unit
                and amount % self.step_size == 0)


def _in_scope(providers, root_id, window, also_ids):
    """Conditions on the ``providers`` table for a tree (``root_id``)
    and/or a window of trees (inclusive root id range) plus ``also_ids``."""
    conditions = []
    if root_id is not None:
        conditions.append(providers.c.root_provider_id == root_id)
    if window is not None:
        in_window = providers.c.root_provider_id.between(*window)
        if also_ids:
            in_window = sa.or_(in_window,
                               providers.c.id.in_(sorted(also_ids)))
        conditions.append(in_window)
    return conditions


def _usage_query(in_scope, rc_ids=None):
    """The amount used per provider and class, for the providers that
    ``in_scope`` (conditions on ``in_scope_rp``; none: every provider)
    selects, of the classes ``rc_ids`` (None: every class)."""
    query = (sa.select(alloc.c.resource_provider_id,
                       alloc.c.resource_class_id,
                       sa.func.sum(alloc.c.used).label('used'))
             .group_by(alloc.c.resource_provider_id,
                       alloc.c.resource_class_id))
    if rc_ids is not None:
        query = query.where(alloc.c.resource_class_id.in_(sorted(rc_ids)))
    if in_scope:
        query = query.where(alloc.c.resource_provider_id.in_(
            sa.select(in_scope_rp.c.id).where(*in_scope)))
    return query


def _usage(in_scope, rc_ids=None):
    """:func:`_usage_query` as the subquery ``usage``."""
    return _usage_query(in_scope, rc_ids).subquery('usage')


def _with_usage(inventories, usage):
    """``inventories`` (a join holding the inventories table) joined to the
    amounts ``usage`` gives for each inventory's provider and class."""
    return inventories.outerjoin(usage, sa.and_(
        usage.c.resource_provider_id == inv.c.resource_provider_id,
        usage.c.resource_class_id == inv.c.resource_class_id))


def capacities(conn, rc_ids, root_id=None, window=None, also_ids=()):
    """{rc id: {provider id: Capacity}} for every inventory of ``rc_ids``,
    in one query. With ``root_id``, only providers of that tree; with
    ``window`` (an inclusive range of root ids), only providers of those
    trees and ``also_ids``: the cost is then bounded by the window."""
    found = {rc_id: {} for rc_id in rc_ids}
    if not rc_ids:
        return found
    usage = _usage(_in_scope(in_scope_rp, root_id, window, also_ids),
                   rc_ids)
    query = (
        sa.select(inv.c.resource_class_id, rp.c.id, rp.c.root_provider_id,
                  inv.c.total, inv.c.reserved, inv.c.allocation_ratio,
                  sa.func.coalesce(usage.c.used, 0), inv.c.min_unit,
                  inv.c.max_unit, inv.c.step_size)
        .select_from(_with_usage(
            rp.join(inv, inv.c.resource_provider_id == rp.c.id), usage))
        .where(inv.c.resource_class_id.in_(sorted(rc_ids)),
               *_in_scope(rp, root_id, window, also_ids)))
    for (rc_id, id_, root, total, reserved, ratio, used, min_unit, max_unit,
         step_size) in conn.execute(query).all():
        found[rc_id][id_] = Capacity(root, int((total - reserved) * ratio),
                                     int(used), min_unit, max_unit,
                                     step_size)
    return found


def root_window(conn, after_id, count):
    """(first, last, is_final) for the next ``count`` trees in creation
    order after root ``after_id`` (None: from the start): their first and
    last root ids, and whether no tree comes after them. None when there
    are no more trees."""
    query = sa.select(rp.c.id).where(rp.c.parent_provider_id.is_(None))
    if after_id is not None:
        query = query.where(rp.c.id > after_id)
    ids = conn.execute(query.order_by(rp.c.id).limit(count)).scalars().all()
    return (ids[0], ids[-1], len(ids) < count) if ids else None


def provider_ids_with_traits(conn, required):
    """Ids of providers having, for each set of trait ids in ``required``,
    at least one of them."""
    query = sa.select(rp.c.id)
    for n, alternatives in enumerate(required):
        has = _nth_alias(rpt, n)
        query = query.where(sa.exists().where(
            has.c.resource_provider_id == rp.c.id,
            has.c.trait_id.in_(sorted(alternatives))))
    return set(conn.execute(query).scalars().all())


def provider_ids_with_any_trait(conn, trait_ids):
    if not trait_ids:
        return set()
    query = (sa.select(rpt.c.resource_provider_id).distinct()
             .where(rpt.c.trait_id.in_(sorted(trait_ids))))
    return set(conn.execute(query).scalars().all())


def traits_of_providers_among(conn, trait_ids):
    """{provider id: set of trait ids} restricted to ``trait_ids``."""
    found = collections.defaultdict(set)
    if not trait_ids:
        return found
    query = sa.select(rpt.c.resource_provider_id, rpt.c.trait_id).where(
        rpt.c.trait_id.in_(sorted(trait_ids)))
    for provider_id, trait_id in conn.execute(query):
        found[provider_id].add(trait_id)
    return found


def aggregate_ids(conn, uuids):
    """{uuid: id} for the aggregates among ``uuids`` that exist."""
    if not uuids:
        return {}
    query = sa.select(aggs.c.uuid, aggs.c.id).where(
        aggs.c.uuid.in_(sorted(uuids)))
    return {uuid: id_ for uuid, id_ in conn.execute(query)}


def provider_ids_in_aggregates(conn, member_of):
    """Ids of providers that are, for each set of aggregate uuids in
    ``member_of``, in at least one of them."""
    known = aggregate_ids(conn, set().union(*member_of))
    query = sa.select(rp.c.id)
    for n, alternatives in enumerate(member_of):
        ids = sorted(known[uuid] for uuid in alternatives if uuid in known)
        if not ids:
            return set()
        member = _nth_alias(rpa, n)
        query = query.where(sa.exists().where(
            member.c.resource_provider_id == rp.c.id,
            member.c.aggregate_id.in_(ids)))
    return set(conn.execute(query).scalars().all())


def provider_ids_in_any_aggregate(conn, uuids):
    known = aggregate_ids(conn, uuids)
    if not known:
        return set()
    query = (sa.select(rpa.c.resource_provider_id).distinct()
             .where(rpa.c.aggregate_id.in_(sorted(known.values()))))
    return set(conn.execute(query).scalars().all())


def sharing_provider_ids(conn):
    """Providers that share their inventory with their aggregates."""
    query = (sa.select(rpt.c.resource_provider_id)
             .select_from(rpt.join(traits, traits.c.id == rpt.c.trait_id))
             .where(traits.c.name == SHARING_TRAIT))
    return set(conn.execute(query).scalars().all())


def anchors_for_sharing(conn, sharing_ids, window=None):
    """{sharing provider id: root ids of the trees it serves}: the roots of
    every provider sharing an aggregate with it (its own root included when
    it is in any aggregate); only roots in ``window`` (an inclusive range
    of root ids) when given."""
    anchors = collections.defaultdict(set)
    if not sharing_ids:
        return anchors
    mine, theirs = mine_rpa, theirs_rpa
    query = (
        sa.select(mine.c.resource_provider_id, rp.c.root_provider_id)
        .distinct()
        .select_from(
            mine.join(theirs, theirs.c.aggregate_id == mine.c.aggregate_id)
            .join(rp, rp.c.id == theirs.c.resource_provider_id))
        .where(mine.c.resource_provider_id.in_(sorted(sharing_ids))))
    if window is not None:
        query = query.where(rp.c.root_provider_id.between(*window))
    for sharing_id, root_id in conn.execute(query):
        anchors[sharing_id].add(root_id)
    return anchors


def roots_with_traits(conn, required_ids, forbidden_ids):
    """Ids of root providers having all ``required_ids`` and none of
    ``forbidden_ids``."""
    query = sa.select(rp.c.id).where(rp.c.parent_provider_id.is_(None))
    for n, trait_id in enumerate(sorted(required_ids)):
        has = _nth_alias(rpt, n)
        query = query.where(sa.exists().where(
            has.c.resource_provider_id == rp.c.id, has.c.trait_id == trait_id))
    if forbidden_ids:
        query = query.where(~sa.exists().where(
            rpt.c.resource_provider_id == rp.c.id,
            rpt.c.trait_id.in_(sorted(forbidden_ids))))
    return set(conn.execute(query).scalars().all())


def tree_of(conn, uuid):
    """(provider id, root id) for the provider ``uuid``, or None."""
    row = conn.execute(sa.select(rp.c.id, rp.c.root_provider_id)
                       .where(rp.c.uuid == uuid)).first()
    return tuple(row) if row else None


def has_provider_trees(conn):
    """Whether any provider has a parent (the reference's switch for the
    legacy, tree-unaware microversions)."""
    query = sa.select(rp.c.id).where(
        rp.c.parent_provider_id.isnot(None)).limit(1)
    return conn.execute(query).first() is not None


def providers_except(conn, excluded_ids):
    """{id: root id} of every provider not in ``excluded_ids``."""
    query = sa.select(rp.c.id, rp.c.root_provider_id)
    rows = conn.execute(query)
    return {id_: root for id_, root in rows if id_ not in excluded_ids}


def roots_of(conn, provider_ids):
    """{provider id: root id} for ``provider_ids``."""
    if not provider_ids:
        return {}
    query = sa.select(rp.c.id, rp.c.root_provider_id).where(
        rp.c.id.in_(sorted(provider_ids)))
    return dict(conn.execute(query).all())


@dataclasses.dataclass
class TreeSummaries:
    """Every provider of some trees, as provider summaries show them."""

    #: {provider id: (uuid, parent uuid, root uuid)}, in provider id order.
    identities: dict
    #: {provider id: {resource class name: {'capacity': capacity,
    #: 'used': used}}}, classes in id order; providers without inventory
    #: are left out.
    resources: dict
    #: {provider id: [trait names]} in trait id order (standard traits
    #: first, then custom ones as created), the order the reference shows;
    #: providers without traits are left out.
    traits: dict


def providers_of_trees(conn, root_ids):
    """The TreeSummaries of every provider of the trees rooted at
    ``root_ids``: identities, inventories with usage, and traits.

    When the trees are a third of the cloud or more, every provider is
    read and those of other trees are dropped here: filtering by root then
    costs more than reading them. Inventories and usage are read apart and
    joined here, which is cheaper than joining them in SQL."""
    if not root_ids:
        return TreeSummaries({}, {}, {})
    if 3 * len(root_ids) >= _root_count(conn):
        in_trees = []
    else:
        in_trees = [in_scope_rp.c.root_provider_id.in_(
            sa.bindparam('roots', sorted(root_ids), expanding=True))]

    def of_trees(query, provider_id):
        if not in_trees:
            return query
        return query.where(provider_id.in_(
            sa.select(in_scope_rp.c.id).where(*in_trees)))

    rows = conn.execute(of_trees(
        sa.select(rp.c.id, rp.c.uuid, rp.c.parent_provider_id,
                  rp.c.root_provider_id), rp.c.id).order_by(rp.c.id)).all()
    uuid_of = {row[0]: row[1] for row in rows}
    identities = {id_: (uuid, uuid_of.get(parent_id), uuid_of[root_id])
                  for id_, uuid, parent_id, root_id in rows
                  if root_id in root_ids}

    used = {(provider_id, rc_id): amount
            for provider_id, rc_id, amount in conn.execute(
                _usage_query(in_trees)).all()}
    class_names = lookups.resource_class_names(conn)
    query = of_trees(
        sa.select(inv.c.resource_provider_id, inv.c.resource_class_id,
                  inv.c.total, inv.c.reserved, inv.c.allocation_ratio),
        inv.c.resource_provider_id).order_by(inv.c.resource_class_id)
    resources = collections.defaultdict(dict)
    for provider_id, rc_id, total, reserved, ratio in conn.execute(
            query).all():
        if provider_id in identities:
            resources[provider_id][class_names[rc_id]] = {
                'capacity': int((total - reserved) * ratio),
                'used': used.get((provider_id, rc_id), 0)}

    query = of_trees(
        sa.select(rpt.c.resource_provider_id, traits.c.name)
        .select_from(rpt.join(traits, traits.c.id == rpt.c.trait_id)),
        rpt.c.resource_provider_id).order_by(rpt.c.trait_id)
    trait_names = collections.defaultdict(list)
    for provider_id, name in conn.execute(query).all():
        if provider_id in identities:
            trait_names[provider_id].append(name)
    return TreeSummaries(identities, resources, trait_names)


def _root_count(conn):
    query = sa.select(sa.func.count()).select_from(rp).where(
        rp.c.parent_provider_id.is_(None))
    return conn.execute(query).scalar()


def parents_in_trees(conn, root_ids):
    """{provider id: parent id} for every provider of the given trees."""
    if not root_ids:
        return {}
    query = sa.select(rp.c.id, rp.c.parent_provider_id).where(
        rp.c.root_provider_id.in_(sorted(root_ids)))
    return dict(conn.execute(query).all())


def provider_uuids(conn, provider_ids):
    if not provider_ids:
        return {}
    query = sa.select(rp.c.id, rp.c.uuid).where(
        rp.c.id.in_(sorted(provider_ids)))
    return dict(conn.execute(query).all())
