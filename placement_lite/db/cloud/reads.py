"""Reads of the database that bring the kept providers (store.Store) up
to date: of the whole cloud, and of a scope of trees (a window of trees,
one tree, the trees of some roots).

Each read takes every provider's state (id, parent, root, generation
and, where ids are reused, creation time) and what each uses of each
class, and patches the store: a provider whose generation is unchanged
keeps its stock; the others' stocks are read (``restock``), those not
found any more go; usage is set from the sums read. What a read covered
is handed back as rows of the store.

The whole cloud is read as two text values, a line per provider and a
line per (provider, class) used, compared whole with the last ones
(MySQL, SQLite: equal texts, nothing to do). On PostgreSQL the
transactions a statement sees (``pg_current_snapshot()``) tell whether
anything committed since the last read, and if it did, only the
providers written since are read, as triggers logged them (see
_written_since).
"""

import collections
import functools
import sys
import typing

import numpy as np
import sqlalchemy as sa

from placement_lite import observe
from placement_lite.db import candidates
from placement_lite.db import links
from placement_lite.db import tables
from placement_lite.db.cloud import store as kept

rp = tables.resource_providers
inv = tables.inventories
alloc = tables.allocations
rpt = tables.resource_provider_traits
traits = tables.traits

# Built once: building an alias, and its columns, on every query costs more
# than running the small queries that use it.
in_scope_rp = rp.alias('in_scope')

#: A read of the whole cloud older than this many transactions is read
#: again whole rather than from the providers logged as written since:
#: the log keeps twice as many (migration 0007 trims it).
MOST_TRANSACTIONS_SINCE = 100_000


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


class Scope(typing.NamedTuple):
    """Which providers a read covers: those of the tree ``:root_id``
    (``by_root``), of the window of trees ``:first``..``:last`` (inclusive
    root ids; ``by_window``) or of the trees ``:roots`` (``by_roots``),
    widened to the providers ``:also_ids`` (``with_also``); of those, only
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
        trees = None
        if self.by_window:
            trees = root.between(sa.bindparam('first'), sa.bindparam('last'))
        if self.by_roots:
            trees = root.in_(links.list_param('roots'))
        if trees is not None:
            if self.with_also:
                trees = sa.or_(trees, providers.c.id.in_(
                    links.list_param('also_ids')))
            conditions.append(trees)
        if self.of_classes:
            conditions.append(providers.c.id.in_(
                sa.select(inv.c.resource_provider_id).where(
                    inv.c.resource_class_id.in_(
                        links.list_param('rc_ids')))))
        return conditions

    def of_providers(self, query, provider_id):
        """``query`` restricted to rows whose ``provider_id`` is in the
        scope."""
        if self == WHOLE_CLOUD:
            return query
        return query.where(provider_id.in_(
            sa.select(in_scope_rp.c.id).where(
                *self.conditions(in_scope_rp))))


WHOLE_CLOUD = Scope()


def ids_reused(conn):
    """Whether the database gives a deleted provider's id to a later one
    (SQLite); PostgreSQL takes ids from a sequence."""
    return conn.dialect.name != 'postgresql'


def _identity(reused):
    if reused:
        # Text: cheaper to read than a datetime, as good to compare.
        return sa.cast(rp.c.created_at, sa.Text)
    # Reading the creation time costs a third of the whole read.
    return sa.literal('*', sa.Text)


class _Queries(typing.NamedTuple):
    """The statements reading one scope: state with usage, on every read;
    uuids, inventories and traits for stale stocks."""

    #: Rows (id, parent id, root id, generation, identity, None, None) for
    #: the providers, then (provider id, None, None, None, None, rc id,
    #: amount used) for their usage.
    state_and_usage: object
    uuids: object
    inventories: object
    traits: object


@functools.cache
def _queries(scope, reused):
    no_integer = sa.cast(sa.null(), sa.Integer)
    state = sa.select(rp.c.id, rp.c.parent_provider_id,
                      rp.c.root_provider_id, rp.c.generation,
                      _identity(reused), no_integer, no_integer)
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
    return _Queries(
        sa.union_all(state.where(*scope.conditions(rp)),
                     scope.of_providers(usage, alloc.c.resource_provider_id)),
        uuids.where(*scope.conditions(rp)),
        scope.of_providers(inventories, inv.c.resource_provider_id),
        scope.of_providers(trait_names, rpt.c.resource_provider_id))


def rows(conn, query, params):
    """Every row of ``query`` as a plain tuple, read straight from the
    database driver: for the large reads, where building SQLAlchemy's Row
    objects costs more than it gives."""
    result = conn.execute(query, params)
    try:
        return result.cursor.fetchall()
    finally:
        result.close()


class State(typing.NamedTuple):
    """Providers' state as read: one array per column, in provider id
    order."""

    ids: np.ndarray
    parents: np.ndarray
    roots: np.ndarray
    generations: np.ndarray
    identities: np.ndarray

    @classmethod
    def of(cls, found):
        """From rows (id, parent id or None, root id, generation,
        identity text)."""
        found = sorted(found)
        return cls(np.array([row[0] for row in found], np.int64),
                   np.array([kept.DEAD if row[1] is None else row[1]
                             for row in found], np.int64),
                   np.array([row[2] for row in found], np.int64),
                   np.array([row[3] for row in found], np.int64),
                   np.array([kept.identity_of(row[4]) for row in found],
                            np.int64))

    def __getitem__(self, which):
        if isinstance(which, int):
            return tuple.__getitem__(self, which)
        return State(*(column[which] for column in self))


class Usage(typing.NamedTuple):
    """Sums of usage as read: provider id, rc id, amount, one array
    each."""

    ids: np.ndarray
    rcs: np.ndarray
    amounts: np.ndarray


def read_scope(conn, kept_cloud, scope, params, scope_of_trees):
    """Read the providers of ``scope`` (not the whole cloud) with
    ``params`` into the store of ``kept_cloud`` (a cloud.Cloud); their
    rows, in provider id order.
    ``scope_of_trees(root ids)``: the (scope, params) stale stocks are
    read with."""
    found_state, found_usage = [], []
    for row in rows(conn, _queries(scope, ids_reused(conn)).state_and_usage,
                    params):
        if row[5] is None:
            found_state.append(row[:5])
        else:
            found_usage.append((row[0], row[5], row[6]))
    usage = Usage(*(np.array(column, np.int64) for column in (
        zip(*found_usage) if found_usage else ((), (), ()))))
    return patch(conn, kept_cloud, State.of(found_state), usage,
                 scope_of_trees)


def patch(conn, kept_cloud, state, usage, scope_of_trees, whole=False,
          written=None, stocks_unchanged=False):
    """The store of ``kept_cloud`` (a cloud.Cloud) brought up to the
    providers' ``state`` and ``usage`` just
    read (of a scope, or with ``whole`` of the whole cloud: every kept
    provider not in ``state`` then went; or of the providers ``written``,
    an array of ids: those not in ``state`` went). ``usage`` covers the
    providers of ``state``, or those ``written``. With
    ``stocks_unchanged`` (no inventory, trait or aggregate written since
    the store read them), a kept provider whose generation moved keeps
    its stock. The rows of ``state``, in provider id order."""
    kept_cloud.compact_if_worth_it()
    store = kept_cloud.store
    placed, current = store.placed(*state)
    if stocks_unchanged and not current.all():
        current = store.regenerated(placed, current, state.generations,
                                     state.identities)
    observe.watcher.stocks(kept=int(current.sum()),
                           read=int(len(current) - current.sum()))
    if not current.all():
        stale = state[~current]
        placed[~current] = _restock(conn, store, stale, scope_of_trees)
    if whole:
        store.remove(np.setdiff1d(store.rows.id[store.live_rows()],
                                  state.ids))
    covered = placed[placed != kept.DEAD]
    usage_rows = covered
    if written is not None:
        store.remove(np.setdiff1d(written, state.ids))
        usage_rows = store.rows_of(written)
        usage_rows = usage_rows[usage_rows != kept.DEAD]
    used = store.rows_of(usage.ids)
    with_row = used != kept.DEAD
    store.set_usage(usage_rows, used[with_row], usage.rcs[with_row],
                    usage.amounts[with_row])
    return covered


def _restock(conn, store, stale, scope_of_trees):
    """Read and keep the stock of the ``stale`` providers (a State), with
    the trees they are in; their rows (DEAD for those deleted since)."""
    scope, params = scope_of_trees(set(stale.roots.tolist()))
    queries = _queries(scope, ids_reused(conn))
    wanted = set(stale.ids.tolist())
    uuids = {id_: uuid for id_, uuid in rows(conn, queries.uuids, params)
             if id_ in wanted}
    inventories = collections.defaultdict(list)
    for (provider_id, rc_id, total, reserved, ratio, min_unit, max_unit,
         step_size) in rows(conn, queries.inventories, params):
        if provider_id in wanted:
            inventories[provider_id].append(
                (rc_id, tables.capacity_of(total, reserved, ratio),
                 min_unit, max_unit, step_size))
    names = collections.defaultdict(list)
    for provider_id, name in rows(conn, queries.traits, params):
        if provider_id in wanted:
            # One string per trait name, however many providers have it.
            names[provider_id].append(sys.intern(name))
    return store.restock(*stale, uuids, inventories, names)


#: How a read of the whole cloud was served (the metrics count them).
AS_IS, PATCHED, READ_WHOLE = (observe.CLOUD_AS_IS, observe.CLOUD_PATCHED,
                              observe.CLOUD_READ_WHOLE)

#: PostgreSQL: the triggers logging the providers written and the
#: transactions that changed what providers are (migration 0007), by name.
LOGGING_TRIGGERS = tuple(
    'placement_lite_%s_%s' % (table, event) for table in (
        'resource_providers', 'allocations')
    for event in ('insert', 'update', 'delete')) + tuple(
    'placement_lite_%s_structure' % table for table in (
        'resource_providers', 'inventories', 'traits',
        'resource_provider_traits', 'placement_aggregates',
        'resource_provider_aggregates'))

_TRANSACTIONS_SEEN = sa.select(candidates.TRANSACTIONS_SEEN)


def at_rest(conn, store, seen_now=None):
    """Whether nothing has committed since ``store`` last read the whole
    cloud (PostgreSQL: the same ``pg_current_snapshot()``; ``seen_now``:
    the one a request saw first, else asked). Never elsewhere."""
    if store.transactions_seen is None:
        return False
    if seen_now is None:
        seen_now = conn.execute(_TRANSACTIONS_SEEN).scalar()
    return seen_now == store.transactions_seen


def derived_current(conn, kept_cloud, seen_now=None):
    """``kept_cloud`` (a cloud.Cloud) if what it derived from the database
    (Cloud.derived) holds now, else None. On PostgreSQL, with the logs of
    migration 0007, always: what it derived is dropped once a transaction
    wrote
    what providers are (placement_lite_structure_writes) since it began
    deriving, however many allocations were written meanwhile. Elsewhere,
    while the database is at rest (at_rest)."""
    store = kept_cloud.store
    if not store.writes_logged:
        return kept_cloud if at_rest(conn, store, seen_now) else None
    with kept_cloud.lock:
        since = kept_cloud.derived_since
        if since is not None:
            changed, now = conn.execute(
                _STRUCTURE_WRITTEN_SINCE,
                {'since': _snapshot_xmin(since)}).one()
            # As _written_since: the log may have been trimmed.
            if changed or (_snapshot_xmax(now) - _snapshot_xmin(since)
                           > MOST_TRANSACTIONS_SINCE):
                kept_cloud.derive_again(now)
        else:
            kept_cloud.derive_again(seen_now or conn.execute(
                _TRANSACTIONS_SEEN).scalar())
    return kept_cloud


def read_whole(conn, kept_cloud, scope_of_trees, seen_now=None):
    """Bring the store of ``kept_cloud`` (a cloud.Cloud) up to the whole
    cloud; how (AS_IS, PATCHED or READ_WHOLE). Reads of the whole cloud
    take turns."""
    with kept_cloud.lock:
        how = _read_whole(conn, kept_cloud, scope_of_trees, seen_now)
    observe.watcher.cloud_read(how)
    return how


def _read_whole(conn, kept_cloud, scope_of_trees, seen_now):
    store = kept_cloud.store
    reused = ids_reused(conn)
    seen = None
    if conn.dialect.name == 'postgresql':
        if at_rest(conn, store, seen_now):
            return AS_IS
        if store.transactions_seen is not None and _written_since(
                conn, kept_cloud, scope_of_trees):
            return PATCHED
        state, usage, seen, store.writes_logged = conn.execute(
            _whole_query(reused, on_postgresql=True)).one()
    elif conn.dialect.name == 'mysql':
        state, usage = (
            '\n'.join(row[0] for row in rows(conn, query, {}))
            for query in _mysql_whole_queries(reused))
    else:
        state, usage = conn.execute(_whole_query(reused)).one()
    if store.texts == (state, usage):
        return AS_IS
    how = (READ_WHOLE if store.texts is None
           and store.transactions_seen is None else PATCHED)
    patch(conn, kept_cloud, _state_of_text(state or '', reused),
          _usage_of_text(usage or ''), scope_of_trees, whole=True)
    store.texts = (state, usage) if seen is None else None
    store.whole_read(seen)
    if not store.writes_logged:
        # Derived while at rest: only until something commits.
        kept_cloud.derived_sets = {}
    return how


def _written_since(conn, kept_cloud, scope_of_trees):
    """PostgreSQL: bring the store of ``kept_cloud`` up to date from the
    providers logged as written (their rows, or allocations of them:
    migration 0007) since its last read of the whole cloud; False when
    that cannot tell it all: the read is older than
    MOST_TRANSACTIONS_SINCE transactions (the log may have been trimmed
    since), or the log was not there when it read.

    A provider written since was written by a transaction at or after
    the oldest one running when the store last read (its snapshot's
    xmin): every transaction it did not see. Providers written by
    transactions it did see come back too, and are found unchanged. Each
    provider logged is read again, its state and usage; one not found
    went. Where no transaction logged as changing what providers are
    (their places, inventories, traits, aggregates) is among those, the
    generations that moved were moved by allocations: the stocks kept
    stay."""
    store = kept_cloud.store
    if not store.writes_logged:
        return False
    oldest_unseen = _snapshot_xmin(store.transactions_seen)
    state, usage, written, seen, structure_written = conn.execute(
        _written_since_query(), {'since': oldest_unseen}).one()
    # Every transaction a trim of the log could have run in is before
    # the next one this statement's snapshot would give (its xmax).
    if _snapshot_xmax(seen) - oldest_unseen > MOST_TRANSACTIONS_SINCE:
        return False
    patch(conn, kept_cloud, _state_of_text(state or '', False),
          _usage_of_text(usage or ''), scope_of_trees,
          written=_numbers(written or '', 1)[:, 0].copy(),
          stocks_unchanged=not structure_written)
    store.whole_read(seen)
    return True


def _snapshot_xmin(snapshot):
    """The oldest transaction running in ``snapshot`` (PostgreSQL's
    pg_current_snapshot() as text, ``xmin:xmax:running``)."""
    return int(snapshot.split(':', 1)[0])


def _snapshot_xmax(snapshot):
    """The first transaction not yet given when ``snapshot`` was taken."""
    return int(snapshot.split(':', 2)[1])


def _state_of_text(text, reused):
    """The State of state lines (see _state_line): numbers only where ids
    are not reused, else an identity text last."""
    if not reused:
        numbers = _numbers(text, 4)
        numbers = numbers[np.argsort(numbers[:, 0], kind='stable')]
        return State(numbers[:, 0].copy(), numbers[:, 1].copy(),
                     numbers[:, 2].copy(), numbers[:, 3].copy(),
                     np.zeros(len(numbers), np.int64))
    found = []
    for line in text.split('\n') if text else ():
        id_, parent, root, generation, identity = line.split(' ', 4)
        found.append((int(id_), None if parent == '-1' else int(parent),
                      int(root), int(generation), identity or None))
    return State.of(found)


def _numbers(text, per_line):
    """The integers of ``text``, ``per_line`` to a row."""
    if not text:
        return np.zeros((0, per_line), np.int64)
    return np.fromstring(text, np.int64, sep=' ').reshape(-1, per_line)


def _usage_of_text(text):
    """The Usage of usage lines: provider, class, amount."""
    numbers = _numbers(text, 3)
    return Usage(numbers[:, 0].copy(), numbers[:, 1].copy(),
                 numbers[:, 2].copy())


def _line(*columns):
    """``columns`` as one line of text: the values separated by spaces."""
    line = None
    for column in columns:
        value = sa.cast(column, sa.Text)
        line = value if line is None else line.concat(' ').concat(value)
    return line


def _text_lines(*columns):
    """A select of ``columns`` aggregated as text, one line per row.
    (Comparing one text with the last read is far cheaper than making
    and comparing a tuple per row, and parsing numbers from one text
    cheaper than reading rows.)"""
    return sa.select(sa.func.aggregate_strings(_line(*columns), '\n'))


def _state_columns(reused):
    """A provider's state line: id, parent (-1 for none), root,
    generation, and where ids are reused its creation time (empty for
    none)."""
    columns = [rp.c.id, sa.func.coalesce(rp.c.parent_provider_id, -1),
               rp.c.root_provider_id, rp.c.generation]
    if reused:
        columns.append(sa.func.coalesce(_identity(True), ''))
    return columns


def _usage_sums(providers=None):
    """Per provider and class used: the sum used (of ``providers``, a
    select of provider ids, or every one)."""
    query = sa.select(alloc.c.resource_provider_id.label('provider'),
                      alloc.c.resource_class_id.label('rc'),
                      sa.func.sum(alloc.c.used).label('used'))
    if providers is not None:
        query = query.where(alloc.c.resource_provider_id.in_(providers))
    return query.group_by(alloc.c.resource_provider_id,
                          alloc.c.resource_class_id).subquery()


def _usage_lines(sums):
    return _text_lines(sums.c.provider, sums.c.rc, sums.c.used)


@functools.cache
def _whole_query(reused, on_postgresql=False):
    """Every provider's state and every (provider, class)'s usage, as two
    text values, and ``on_postgresql`` the transactions the statement saw
    and whether, as it saw the database, triggers log the providers
    written (migration 0007: from then on, every write is logged)."""
    columns = [_text_lines(*_state_columns(reused)).scalar_subquery(),
               _usage_lines(_usage_sums()).scalar_subquery()]
    if on_postgresql:
        columns.append(_TRANSACTIONS_SEEN.scalar_subquery())
        columns.append(sa.select(sa.func.count() == len(LOGGING_TRIGGERS))
                       .select_from(sa.table('pg_trigger',
                                             sa.column('tgname'),
                                             schema='pg_catalog'))
                       .where(sa.column('tgname').in_(LOGGING_TRIGGERS))
                       .scalar_subquery())
    return sa.select(*columns)


@functools.cache
def _mysql_whole_queries(reused):
    """MySQL/MariaDB: the lines of _whole_query, one row each, in order.
    GROUP_CONCAT silently cuts its result at max_allowed_packet (16 MiB by
    default), which a large cloud exceeds."""
    sums = _usage_sums()
    return (sa.select(_line(*_state_columns(reused))).order_by(rp.c.id),
            sa.select(_line(sums.c.provider, sums.c.rc, sums.c.used))
            .order_by(sums.c.provider, sums.c.rc))


#: Whether a transaction at or after ``:since`` wrote what providers
#: are, and the transactions the statement saw.
_STRUCTURE_WRITTEN = sa.exists().where(
    tables.structure_writes.c.transaction_id
    >= sa.bindparam('since', type_=sa.BigInteger))
_STRUCTURE_WRITTEN_SINCE = sa.select(_STRUCTURE_WRITTEN,
                                     candidates.TRANSACTIONS_SEEN)


@functools.cache
def _written_since_query():
    """The state lines of the providers logged as written by a
    transaction at or after ``:since``, the usage lines of those
    providers, their ids (one text), the transactions the statement saw,
    and whether a transaction at or after ``:since`` changed what
    providers are."""
    log = tables.provider_writes
    written = (sa.select(log.c.provider_id)
               .where(log.c.transaction_id >= sa.bindparam(
                   'since', type_=sa.BigInteger))
               .distinct())
    state = _text_lines(*_state_columns(False)).where(rp.c.id.in_(written))
    usage = _usage_lines(_usage_sums(written))
    ids = sa.select(sa.func.aggregate_strings(
        sa.cast(written.subquery().c.provider_id, sa.Text), ' '))
    return sa.select(*(select.scalar_subquery() for select in (
        state, usage, ids, _TRANSACTIONS_SEEN)), _STRUCTURE_WRITTEN)
