"""The SQL behind GET /allocation_candidates, and nothing else.

Each function is one set-based query (or two) returning plain Python
values: providers by traits, aggregates, sharing and tree. Only the
request's db.cloud.View calls them: it decides whether what it needs is
kept by the process or read here. What providers have and use is read
by db.cloud.reads.

Statements are built once per form and run with parameters: building and
keying a statement costs more than running the small ones.
"""

import collections
import functools
import typing

import sqlalchemy as sa

from placement_lite.db import links
from placement_lite.db import tables

rp = tables.resource_providers
rc = tables.resource_classes
rpt = tables.resource_provider_traits
rpa = tables.resource_provider_aggregates
aggs = tables.placement_aggregates
traits = tables.traits
inv = tables.inventories

#: The trait of a provider sharing its inventory with its aggregates.
SHARING_TRAIT = 'MISC_SHARES_VIA_AGGREGATE'


_ROOTS = links.ROOTS
_FIRST_ROOTS = _ROOTS.order_by(rp.c.id).limit(sa.bindparam('count'))
_ROOTS_AFTER = (_ROOTS.where(rp.c.id > sa.bindparam('after_id'))
                .order_by(rp.c.id).limit(sa.bindparam('count')))
_FIRST_ROOTS_BEFORE = (_ROOTS.where(rp.c.id < sa.bindparam('before_id'))
                       .order_by(rp.c.id).limit(sa.bindparam('count')))
_ROOTS_BETWEEN = (_ROOTS.where(rp.c.id > sa.bindparam('after_id'),
                               rp.c.id < sa.bindparam('before_id'))
                  .order_by(rp.c.id).limit(sa.bindparam('count')))
_ROOT_COUNT = sa.select(sa.func.count()).select_from(_ROOTS.subquery())
_NTH_ROOT = _ROOTS.order_by(rp.c.id).limit(1).offset(sa.bindparam('n'))


class RootWindow(typing.NamedTuple):
    """Trees in creation order, from root id ``first`` to ``last``."""

    first: int
    last: int
    #: How many trees it holds.
    trees: int
    #: Whether no tree comes after it.
    is_final: bool


def root_window(conn, after_id, count, before_id=None):
    """The RootWindow of the next ``count`` trees in creation order after
    root ``after_id`` (None: from the start) and before root ``before_id``
    (None: to the end); None when there are no more trees there."""
    if before_id is None:
        query = _FIRST_ROOTS if after_id is None else _ROOTS_AFTER
    else:
        query = _FIRST_ROOTS_BEFORE if after_id is None else _ROOTS_BETWEEN
    ids = conn.execute(query, {'after_id': after_id, 'before_id': before_id,
                               'count': count}).scalars().all()
    if not ids:
        return None
    return RootWindow(ids[0], ids[-1], len(ids), len(ids) < count)


def root_count(conn):
    """How many trees there are."""
    return conn.execute(_ROOT_COUNT).scalar()


def nth_root(conn, n):
    """The id of the ``n``th tree (from 0) in creation order."""
    return conn.execute(_NTH_ROOT, {'n': n}).scalar()


def _providers_linked_to_each(conn, link_table, column, id_sets,
                              roots_only=False, forbidden_ids=(),
                              with_roots=False):
    """Ids of providers (root providers, with ``roots_only``) linked in
    ``link_table`` to at least one id of each set in ``id_sets`` and to
    none of ``forbidden_ids``; with ``with_roots``, {their id: their root's
    id}."""
    query = links.linked_to_each(link_table, column, len(id_sets),
                                 roots_only, bool(forbidden_ids), with_roots,
                                 _postgresql(conn))
    found = conn.execute(query, links.each_params(column, id_sets,
                                                  forbidden_ids))
    return dict(found.all()) if with_roots else set(found.scalars().all())


def _providers_linked_to_any(conn, link_table, column, ids):
    """Ids of providers linked in ``link_table`` to any of ``ids``."""
    return set(conn.execute(
        links.linked_to_any(link_table, column, _postgresql(conn)),
        links.any_params(column, ids)).scalars().all())


def _postgresql(conn):
    return conn.dialect.name == 'postgresql'


def provider_ids_with_traits(conn, required):
    """Ids of providers having, for each set of trait ids in ``required``,
    at least one of them."""
    return _providers_linked_to_each(conn, rpt, 'trait_id', required)


def provider_ids_with_any_trait(conn, trait_ids):
    if not trait_ids:
        return set()
    return _providers_linked_to_any(conn, rpt, 'trait_id', trait_ids)


def provider_ids_in_aggregates(conn, id_sets, roots_only=False,
                               forbidden_ids=(), with_roots=False):
    """Ids of providers (root providers, with ``roots_only``) that are,
    for each set of aggregate ids in ``id_sets``, in at least one of
    them, and in none of ``forbidden_ids``; with ``with_roots``, {their
    id: their root's id}."""
    return _providers_linked_to_each(conn, rpa, 'aggregate_id', id_sets,
                                     roots_only, forbidden_ids, with_roots)


def provider_ids_in_any_aggregate(conn, uuids, aggregate_ids):
    """Ids of providers in any of the aggregates ``uuids``
    (``aggregate_ids``: {uuid: id} of those that exist)."""
    known = [aggregate_ids[uuid] for uuid in uuids if uuid in aggregate_ids]
    if not known:
        return set()
    return _providers_linked_to_any(conn, rpa, 'aggregate_id', known)


class Known(typing.NamedTuple):
    """What a candidates request starts from (see read_known)."""

    #: {id: name} of every resource class.
    class_names: dict
    #: {class id: the most one provider could give of it if nothing were
    #: used}, for the classes named that some provider has.
    largest: dict
    #: {name: id} of the traits named that exist.
    trait_ids: dict
    #: {uuid: id} of the aggregates named that exist.
    aggregate_ids: dict
    #: {uuid: root id} of the providers named by in_tree that exist.
    tree_roots: dict
    #: PostgreSQL: the transactions the read saw (TRANSACTIONS_SEEN);
    #: None elsewhere.
    transactions_seen: typing.Optional[str] = None


_inv = inv.alias('largest')
_NO_NAME = sa.cast(sa.null(), sa.String)
_NO_AMOUNT = sa.cast(sa.null(), sa.Float)


def _rows(kind, id_, name=_NO_NAME, amount=_NO_AMOUNT):
    return sa.select(sa.literal_column(str(kind)), id_, name, amount)


_CLASS_NAMES = _rows(0, rc.c.id, rc.c.name)


def _known_part(name, postgresql):
    """The rows of a Known besides class names for the parameter ``name``
    (``postgresql``: see links.one_of)."""
    if name == 'classes':
        return _rows(2, rc.c.id, amount=sa.select(
            sa.func.max(tables.largest_unit(_inv))).where(
                _inv.c.resource_class_id == rc.c.id).scalar_subquery()).where(
                    links.one_of(rc.c.name, name, postgresql))
    if name == 'traits':
        return _rows(3, traits.c.id, traits.c.name).where(
            links.one_of(traits.c.name, name, postgresql))
    if name == 'aggregates':
        return _rows(4, aggs.c.id, aggs.c.uuid).where(
            links.one_of(aggs.c.uuid, name, postgresql))
    return _rows(5, rp.c.root_provider_id, rp.c.uuid).where(
        links.one_of(rp.c.uuid, name, postgresql))


#: PostgreSQL: which transactions a statement sees, as text (a request
#: asks it in its first statement: read_known).
TRANSACTIONS_SEEN = sa.cast(sa.func.pg_current_snapshot(), sa.Text)
_TRANSACTIONS_SEEN_ROW = _rows(6, sa.cast(sa.null(), sa.Integer),
                               TRANSACTIONS_SEEN)


@functools.cache
def _known_query(named, postgresql):
    """Query: the rows of a Known, for the parameters ``named`` (a sorted
    tuple of _known_part names): a part nothing is named for is left out,
    not planned and run to find nothing; on PostgreSQL, with the
    transactions the statement saw."""
    return sa.union_all(
        _CLASS_NAMES, *(_known_part(name, postgresql) for name in named),
        *([_TRANSACTIONS_SEEN_ROW] if postgresql else []))


def read_known(conn, classes, trait_names, aggregate_uuids, tree_uuids):
    """The Known of a request naming these classes, traits, aggregates and
    in_tree providers: every lookup a search needs before it filters
    providers, and what tells whether the cloud is at rest (the
    transactions seen: cloud.reads.at_rest), in one round trip."""
    class_names, largest = {}, {}
    trait_ids, aggregate_ids_, tree_roots = {}, {}, {}
    seen = None
    params = {name: sorted(values) for name, values in (
        ('classes', classes), ('traits', trait_names),
        ('aggregates', aggregate_uuids), ('trees', tree_uuids)) if values}
    found = conn.execute(_known_query(tuple(params), _postgresql(conn)),
                         params)
    for kind, id_, name, amount in found:
        if kind == 0:
            class_names[id_] = name
        elif kind == 2:
            if amount is not None:
                largest[id_] = amount
        elif kind == 3:
            trait_ids[name] = id_
        elif kind == 4:
            aggregate_ids_[name] = id_
        elif kind == 5:
            tree_roots[name] = id_
        else:
            seen = name
    return Known(class_names, largest, trait_ids, aggregate_ids_, tree_roots,
                 seen)


_HOLDER_IDS_OF_CLASS = sa.select(inv.c.resource_provider_id).where(
    inv.c.resource_class_id == sa.bindparam('rc_id'))
_HOLDER_IDS_OF_TRAITS = sa.select(rpt.c.resource_provider_id).where(
    rpt.c.trait_id.in_(links.list_param('trait_ids')))


@functools.cache
def _holders_query(holder_ids, postgresql):
    """Query: (id, root id) of the providers ``holder_ids`` selects, at
    most ``:most``. PostgreSQL finds them by primary key from an array of
    the ids: joined, it hashes every provider instead (75 ms at 50,000
    hosts against 33 for 10,000 holders)."""
    if postgresql:
        return sa.select(rp.c.id, rp.c.root_provider_id).where(
            rp.c.id == sa.any_(sa.func.array(
                holder_ids.limit(sa.bindparam('most')).scalar_subquery())))
    return (sa.select(rp.c.id, rp.c.root_provider_id).distinct()
            .where(rp.c.id.in_(holder_ids.subquery().select()))
            .limit(sa.bindparam('most')))


def holders(conn, most, rc_id=None, trait_ids=()):
    """[(provider id, root id)] of at most ``most`` providers holding an
    inventory of ``rc_id``, or having any of ``trait_ids``."""
    if rc_id is not None:
        holder_ids, params = _HOLDER_IDS_OF_CLASS, {'rc_id': rc_id}
    else:
        holder_ids, params = _HOLDER_IDS_OF_TRAITS, {
            'trait_ids': sorted(trait_ids)}
    return conn.execute(_holders_query(holder_ids, _postgresql(conn)),
                        {**params, 'most': most}).all()


_SHARING = (sa.select(rpt.c.resource_provider_id)
            .select_from(rpt.join(traits, traits.c.id == rpt.c.trait_id))
            .where(traits.c.name == SHARING_TRAIT))


def sharing_provider_ids(conn):
    """Ids of every provider sharing its inventory with its aggregates
    (for the providers a search did not read: the stock of those it read
    tells)."""
    return set(conn.execute(_SHARING).scalars())


_AGGREGATES_OF = (
    sa.select(rpa.c.resource_provider_id, rpa.c.aggregate_id)
    .where(rpa.c.resource_provider_id.in_(links.list_param('provider_ids'))))
_ROOTS_IN_AGGREGATES = (
    sa.select(rpa.c.aggregate_id, rp.c.root_provider_id).distinct()
    .select_from(rpa.join(rp, rp.c.id == rpa.c.resource_provider_id))
    .where(rpa.c.aggregate_id.in_(links.list_param('aggregate_ids'))))


def anchors_for_sharing(conn, sharing_ids):
    """{sharing provider id: root ids of the trees it serves}: the roots of
    every provider sharing an aggregate with it (its own root included when
    it is in any aggregate), read in two queries (the sharing providers'
    aggregates, then the roots in them): as one join, PostgreSQL scans
    every membership first."""
    anchors = collections.defaultdict(set)
    if not sharing_ids:
        return anchors
    aggregates_of = collections.defaultdict(set)
    for provider_id, aggregate_id in conn.execute(
            _AGGREGATES_OF, {'provider_ids': sorted(sharing_ids)}):
        aggregates_of[provider_id].add(aggregate_id)
    if not aggregates_of:
        return anchors
    params = {'aggregate_ids': sorted(set().union(*aggregates_of.values()))}
    roots_in = collections.defaultdict(set)
    for aggregate_id, root_id in conn.execute(_ROOTS_IN_AGGREGATES, params):
        roots_in[aggregate_id].add(root_id)
    for provider_id, aggregate_ids in aggregates_of.items():
        anchors[provider_id].update(*(roots_in[a] for a in aggregate_ids))
    return anchors


_member = rp.alias('member')
_member_link = rpa.alias('member_link')
_sharer_link = rpa.alias('sharer_link')
_sharer_trait = rpt.alias('sharer_trait')
_SHARING_SERVING = (
    sa.select(_sharer_link.c.resource_provider_id,
              _member.c.root_provider_id).distinct()
    .select_from(
        _member
        .join(_member_link,
              _member_link.c.resource_provider_id == _member.c.id)
        .join(_sharer_link,
              _sharer_link.c.aggregate_id == _member_link.c.aggregate_id)
        .join(_sharer_trait, _sharer_trait.c.resource_provider_id
              == _sharer_link.c.resource_provider_id)
        .join(traits, traits.c.id == _sharer_trait.c.trait_id))
    .where(traits.c.name == SHARING_TRAIT))
_SHARING_SERVING_WINDOW = _SHARING_SERVING.where(
    _member.c.root_provider_id.between(sa.bindparam('first'),
                                       sa.bindparam('last')))
_SHARING_SERVING_ROOTS = _SHARING_SERVING.where(
    _member.c.root_provider_id.in_(links.list_param('roots')))


def sharing_anchors_in_window(conn, first, last, roots=None):
    """{sharing provider id: root ids of the trees it serves}, for the
    trees whose root id is in ``first``..``last`` (and in ``roots``, when
    given): what anchors_for_sharing gives for a window, found from the
    window's side (its providers' aggregates), so the cost follows the
    window, not how many sharing providers the cloud has."""
    anchors = collections.defaultdict(set)
    if roots is None:
        found = conn.execute(_SHARING_SERVING_WINDOW,
                             {'first': first, 'last': last})
    else:
        found = conn.execute(_SHARING_SERVING_ROOTS, {'roots': sorted(roots)})
    for provider_id, root_id in found:
        anchors[provider_id].add(root_id)
    return anchors


def roots_with_traits(conn, required_ids, forbidden_ids):
    """Ids of root providers having all ``required_ids`` and none of
    ``forbidden_ids``."""
    return _providers_linked_to_each(
        conn, rpt, 'trait_id', [{trait_id} for trait_id in sorted(
            required_ids)], roots_only=True, forbidden_ids=forbidden_ids)


def roots_with_any_trait(conn, trait_ids):
    """Ids of root providers having any of ``trait_ids``."""
    return _providers_linked_to_each(conn, rpt, 'trait_id', [trait_ids],
                                     roots_only=True)


_ANY_CHILD = sa.select(rp.c.id).where(
    rp.c.parent_provider_id.isnot(None)).limit(1)


def has_provider_trees(conn):
    """Whether any provider has a parent (the reference's switch for the
    legacy, tree-unaware microversions)."""
    return conn.execute(_ANY_CHILD).first() is not None


_ALL_ROOTS = sa.select(rp.c.id, rp.c.root_provider_id)


_ROOTS_OF = _ALL_ROOTS.where(rp.c.id.in_(links.list_param('ids')))


def roots_of(conn, provider_ids):
    """{provider id: root id} for ``provider_ids``."""
    if not provider_ids:
        return {}
    return dict(conn.execute(_ROOTS_OF,
                             {'ids': sorted(provider_ids)}).all())


_UUIDS = sa.select(rp.c.id, rp.c.uuid).where(
    rp.c.id.in_(links.list_param('ids')))


def provider_uuids(conn, provider_ids):
    if not provider_ids:
        return {}
    return dict(conn.execute(_UUIDS, {'ids': sorted(provider_ids)}).all())
