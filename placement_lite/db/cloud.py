"""The reads a process keeps: of the whole cloud, and of the windows of
trees searched again and again (at most KEPT_WINDOWS), each made from the
last read of the same scope.

Such a read takes the state of every provider in its scope and every
allocation against them each as one text value, a line per row. When
both texts equal the last ones, that scope is at rest and the last read
serves as it is, with the capacities it built. Otherwise the lines are
compared as sets: only the providers whose state line changed are placed
again (and the index of who holds each class is patched for them), and
usage is patched by the allocation lines gone and new.

On PostgreSQL a read of the whole cloud is brought up to date from the
rows written since it instead (_read_written_since): a cloud taking claims
changes a few providers and allocations per claim, and reading every line
again cost half a second of the database's time per request at 50,000
hosts.
"""

import bisect
import collections
import functools
import weakref

import sqlalchemy as sa

from placement_lite import observe
from placement_lite.db import scope_reads
from placement_lite.db import tables
from placement_lite.db import tree_order

rp = tables.resource_providers
alloc = tables.allocations

#: How many windows' reads a process keeps (the most recently read), besides
#: the whole cloud's: one per shape of request a scheduler sends, at most.
KEPT_WINDOWS = 8
#: {engine: OrderedDict {scope key: CloudRead}}: the last read of each scope
#: kept, per process. The next read of a scope starts from it and places
#: again only the providers whose state row changed (see
#: CloudRead.patched).
_LAST = weakref.WeakKeyDictionary()
_WHOLE_CLOUD_KEY = (scope_reads.WHOLE_CLOUD, ())
#: A read of the whole cloud older than this many transactions is read
#: again whole rather than from the rows written since: VACUUM freezes rows
#: old enough, which then no longer tell the transaction that wrote them
#: (and no read is kept that long in a cloud that serves).
MOST_TRANSACTIONS_SINCE = 1_000_000


def last_whole_cloud(engine):
    """The CloudRead of the whole cloud kept for ``engine``, or None."""
    return _LAST.get(engine, {}).get(_WHOLE_CLOUD_KEY)


def at_rest(conn, seen_now=None):
    """The read of the whole cloud kept for ``conn``'s engine while
    nothing has committed since it was read (PostgreSQL: the same
    ``pg_current_snapshot()``, see read; ``seen_now``: the one a request
    saw first, else asked), else None: what a request may then take from
    it instead of asking the database."""
    whole = last_whole_cloud(conn.engine)
    if whole is None or whole.transactions_seen is None:
        return None
    if seen_now is None:
        seen_now = conn.execute(_TRANSACTIONS_SEEN).scalar()
    return whole if seen_now == whole.transactions_seen else None


def read(conn, place, scope=scope_reads.WHOLE_CLOUD, params=None,
         seen_now=None):
    """The CloudRead of ``scope`` (with ``params``; by default the whole
    cloud): the last one made in this process, patched (see
    CloudRead.patched); ``place(rows)`` places the providers whose state
    changed (see stock.places).

    On PostgreSQL a read also notes the transactions its statement saw
    (``pg_current_snapshot()``). While a new statement sees exactly the
    same ones, nothing has been committed since, anywhere in the database,
    and the last read is the scope as it is: a small statement instead of
    reading every provider and allocation (at 5,000 hosts, tens of
    milliseconds of the database's time). Any commit, to whatever table,
    changes the snapshot and the texts are read and compared as before.
    So too a window never read, or not since a commit, is cut from the
    whole cloud's read while that one is as it is (CloudRead.cut): each
    process of a service reads the whole cloud once when it starts, and
    would otherwise read every window its requests search again itself
    (at 50,000 hosts, 180 ms for 1,250 trees). ``seen_now``: the
    transactions the request's first statement saw, if it asked."""
    params = params or {}
    key = _key(scope, params)
    kept = _LAST.get(conn.engine)
    if kept is None:
        kept = _LAST[conn.engine] = collections.OrderedDict()
    ids_reused = scope_reads.ids_reused(conn)
    last = kept.get(key)
    transactions_seen = None
    if conn.dialect.name == 'mysql':
        state, usage = _mysql_texts(conn, ids_reused, scope, params)
    elif conn.dialect.name == 'postgresql':
        whole = (None if scope == scope_reads.WHOLE_CLOUD
                 else kept.get(_WHOLE_CLOUD_KEY))
        if any(read is not None and read.transactions_seen is not None
               for read in (last, whole)):
            if seen_now is None:
                seen_now = conn.execute(_TRANSACTIONS_SEEN).scalar()
            if last is not None and last.transactions_seen == seen_now:
                _tell(scope, observe.CLOUD_AS_IS)
                return last
            if whole is not None and whole.transactions_seen == seen_now:
                return _kept(kept, key, whole.cut(scope, params))
        if scope == scope_reads.WHOLE_CLOUD and last is not None and (
                last.state is not None and last.transactions_seen):
            made = _read_written_since(conn, ids_reused, last, place)
            if made is not None:
                _tell(scope, observe.CLOUD_PATCHED)
                return _kept(kept, key, made)
        state, usage, transactions_seen = conn.execute(
            _query(ids_reused, scope, with_transactions_seen=True),
            params).one()
    else:
        state, usage = conn.execute(_query(ids_reused, scope), params).one()
    if last is not None and last.state is None:
        last = None
    made = (last or _nothing_read()).patched(_Lines(state), _Lines(usage),
                                             place)
    made.transactions_seen = transactions_seen
    _tell(scope, observe.CLOUD_AS_IS if made is last
          else observe.CLOUD_PATCHED if last is not None
          else observe.CLOUD_READ_WHOLE)
    return _kept(kept, key, made)


def _kept(kept, key, made):
    """``made``, kept as the last read of its scope (``key``): the most
    recently read windows are kept, at most KEPT_WINDOWS."""
    kept[key] = made
    kept.move_to_end(key)
    windows = [k for k in kept if k != _WHOLE_CLOUD_KEY]
    for oldest in windows[:-KEPT_WINDOWS]:
        del kept[oldest]
    return made


def _tell(scope, how):
    """The metrics count how whole-cloud reads were served."""
    if scope == scope_reads.WHOLE_CLOUD:
        observe.watcher.cloud_read(how)


def _key(scope, params):
    """What tells one read's scope from another's: the scope and the
    parameters its conditions use."""
    used = [name for name, by in (
        ('root_id', scope.by_root), ('first', scope.by_window),
        ('last', scope.by_window), ('roots', scope.by_roots),
        ('also_ids', scope.with_also), ('rc_ids', scope.of_classes)) if by]
    return scope, tuple(
        tuple(params[name]) if isinstance(params[name], list)
        else params[name] for name in used)


class CloudRead(scope_reads.Read):
    """A kept Read (of the whole cloud or of a window), with the state and
    usage it was made of (as _Lines), from which the next one of the same
    scope is patched."""

    __slots__ = ('state', 'usage', 'transactions_seen', '_trees',
                 '_derived', '_orders')

    def __init__(self, providers, used, holders, state, usage):
        super().__init__(providers, used, holders)
        #: The _Lines read; None for a read cut from another (see cut),
        #: which the next read of its scope does not patch.
        self.state = state
        self.usage = usage
        #: PostgreSQL: the snapshot (``pg_current_snapshot()`` as text) of
        #: the statement that read ``state`` and ``usage``; None elsewhere.
        self.transactions_seen = None
        #: (sorted root ids, {root id: [provider ids]}), made when first
        #: cut from.
        self._trees = None
        #: {name: what was made of the database while it was at rest since
        #: this read} (see derived).
        self._derived = {}
        #: {orders: tree_order.TreeOrder}, made when first asked for and
        #: moved to the read patched from this one.
        self._orders = {}

    def derived(self, name, make):
        """What ``make()`` gives, made once per read of the whole cloud:
        for what requests would otherwise ask the database again while it
        is at rest since this read (see at_rest)."""
        made = self._derived.get(name)
        if made is None:
            made = self._derived[name] = make()
        return made

    def cut(self, scope, params):
        """The read of ``scope`` (one tree, trees by window or by roots,
        with the providers ``also_ids``, of the classes ``rc_ids``: see
        scope_reads.Scope; not the whole cloud) with ``params``, taken
        from this read of the whole cloud: what reading the scope would
        find while nothing was committed since this read."""
        roots, providers_of = self.trees()
        in_window = None
        if scope.by_roots:
            in_window = params['roots']
        elif scope.by_window:
            in_window = roots[bisect.bisect_left(roots, params['first']):
                              bisect.bisect_right(roots, params['last'])]
        also = params['also_ids'] if scope.with_also else ()
        if scope.by_root:
            # The tree, within the window (or the providers also read).
            root_id = params['root_id']
            if in_window is not None and root_id not in set(in_window):
                in_window = ()
                also = [provider_id for provider_id in also
                        if provider_id in providers_of.get(root_id, ())]
            else:
                in_window, also = (root_id,), ()
        ids = [provider_id for root_id in in_window
               for provider_id in providers_of.get(root_id, ())]
        ids.extend(also)
        if scope.of_classes:
            holders = self._holders(params['rc_ids'])
            ids = [provider_id for provider_id in ids
                   if any(provider_id in holders[rc_id]
                          for rc_id in params['rc_ids'])]
        providers = self.providers
        used = self.used
        found = {provider_id: providers[provider_id] for provider_id in ids
                 if provider_id in providers}
        made = CloudRead(found, {provider_id: used[provider_id]
                                 for provider_id in found
                                 if provider_id in used}, None, None, None)
        made.transactions_seen = self.transactions_seen
        return made

    def tree_order(self, orders):
        """The tree_order.TreeOrder of this read (of the whole cloud) for
        ``orders`` ((rc id, sign), ...)."""
        made = self._orders.get(orders)
        if made is None:
            made = self._orders[orders] = tree_order.TreeOrder(self, orders)
        return made

    def trees(self):
        """(Sorted root ids, {root id: [provider ids of its tree]}), made
        once per read."""
        if self._trees is None:
            providers_of = collections.defaultdict(list)
            for provider_id, place in self.providers.items():
                providers_of[place[1]].append(provider_id)
            self._trees = (sorted(providers_of), dict(providers_of))
        return self._trees

    def patched(self, state, usage, place):
        """This read brought up to ``state`` and
        ``usage`` (the _Lines just read): the providers whose state line is
        new are placed with ``place(rows)`` (see stock.places), those
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
        return self.changed(state, usage, place, (gone_lines, new_lines),
                            (gone_usage, new_usage))

    def changed(self, state, usage, place, state_changes, usage_changes):
        """This read with the state and usage lines gone and new of
        ``state_changes`` and ``usage_changes`` (each (lines gone, lines
        new)), which make ``state`` and ``usage``: see patched."""
        gone_lines, new_lines = state_changes
        gone_usage, new_usage = usage_changes
        # With the same providers, the same holders serve.
        providers = self.providers
        holders = self.holders_by_class
        gone, placed = set(), {}
        if gone_lines or new_lines:
            gone = {int(line.split(' ', 1)[0]) for line in gone_lines}
            providers = dict(providers)
            for provider_id in gone:
                providers.pop(provider_id, None)
            placed = (place(sorted(map(_state_row, new_lines)))
                      if new_lines else {})
            providers.update(placed)
            holders = _patched_holders(holders, gone, placed)
        used = self.used
        using = set()
        if gone_usage or new_usage:
            used, using = _patched_usage(used, gone_usage, new_usage)
        made = CloudRead(providers, used, holders, state, usage)
        if self._trees is not None or self._orders:
            changed = {place[1] for place in placed.values()}.union(
                *({self.providers[p][1]} for p in gone if p in self.providers),
                *({providers[p][1]} for p in using if p in providers))
            if self._trees is not None:
                made._trees = _patched_trees(self._trees, self.providers,
                                             gone, placed)
            made._orders = {orders: order.patched(made, changed)
                            for orders, order in self._orders.items()}
            self._orders = {}
        return made


def _patched_holders(holders, gone, placed):
    """``holders`` (see CloudRead.holders_by_class) without the providers
    ``gone``, with those ``placed``: a new dict, which copies only the
    classes they hold (another thread may be indexing a class of the
    read patched)."""
    touched = {rc_id for _parent, _root, stock in placed.values()
               for rc_id, *_ in stock[3]}
    patched = {}
    for rc_id, held in list(holders.items()):
        if rc_id in touched or any(p in held for p in gone):
            held = dict(held)
            for provider_id in gone:
                held.pop(provider_id, None)
        patched[rc_id] = held
    scope_reads.index(placed, {rc_id: patched[rc_id] for rc_id in touched
                               if rc_id in patched})
    return patched


def _read_written_since(conn, ids_reused, last, place):
    """PostgreSQL: ``last`` (the CloudRead of the whole cloud) brought up
    to date from the rows of providers and allocations written (inserted
    or updated) since its statement, read with how many rows each table
    holds now; None when some row was deleted since (a deleted row leaves
    nothing to read: the lines are then read whole and compared), or when
    ``last`` is older than MOST_TRANSACTIONS_SINCE transactions.

    A row written since carries in ``xmin`` a transaction at or after the
    oldest one running when ``last`` was read (its snapshot's xmin):
    every transaction ``last`` did not see. Rows written by transactions
    ``last`` did see come back too, and are found unchanged."""
    oldest_unseen = _snapshot_xmin(last.transactions_seen)
    state, usage, providers, allocations, seen = conn.execute(
        _written_since_query(ids_reused),
        {'since': str(oldest_unseen % 2 ** 32)}).one()
    if _snapshot_xmin(seen) - oldest_unseen > MOST_TRANSACTIONS_SINCE:
        return None
    state_now = last.state.written(state, providers)
    usage_now = last.usage.written(usage, allocations)
    if state_now is None or usage_now is None:
        return None
    made = last.changed(state_now[0], usage_now[0], place, state_now[1:],
                        usage_now[1:])
    made.transactions_seen = seen
    return made


def _snapshot_xmin(snapshot):
    """The oldest transaction running in ``snapshot`` (PostgreSQL's
    pg_current_snapshot() as text, ``xmin:xmax:running``)."""
    return int(snapshot.split(':', 1)[0])


class _Xid(sa.types.UserDefinedType):
    """PostgreSQL's xid: a transaction id of 32 bits."""

    cache_ok = True

    def get_col_spec(self, **_kw):
        return 'xid'


@functools.cache
def _written_since_query(ids_reused):
    """The lines (see _query) of the providers and allocations written by
    a transaction at or after ``:since`` (a transaction id of 32 bits),
    how many rows each table holds, and the transactions the statement
    saw. (age() counts back from the newest transaction, across
    wraparound. At 50,000 hosts the statement scans 630,000 rows: about
    110 ms of the database's time, against 520 ms to read every line.)"""
    since = sa.func.age(sa.cast(sa.bindparam('since', type_=sa.Text),
                                _Xid()))

    def written(table):
        return sa.func.age(sa.literal_column(
            '%s.xmin' % table.name, type_=_Xid())) <= since

    state, usage = (_text_lines(*columns).where(written(table))
                    for columns, table in zip(_columns(ids_reused),
                                              (rp, alloc)))
    counts = (sa.select(sa.func.count()).select_from(table)
              for table in (rp, alloc))
    return sa.select(*(select.scalar_subquery() for select in (
        state, usage, *counts, _TRANSACTIONS_SEEN)))


def _nothing_read():
    """What the first whole-cloud read of a process patches."""
    return CloudRead({}, {}, None, _Lines(''), _Lines(''))


def _state_row(line):
    """(id, parent id, root id, generation, identity) from a state line;
    an empty identity (SQLite: no creation time) is None."""
    id_, parent_id, root_id, generation, identity = line.split(' ', 4)
    return (int(id_), int(parent_id) if parent_id else None, int(root_id),
            int(generation), identity or None)


def _patched_trees(trees, providers, gone, placed):
    """CloudRead.trees of a read patched from one with ``trees`` and
    ``providers``, whose providers ``gone`` went and ``placed`` ({id:
    place}) were placed again or anew."""
    roots, providers_of = trees
    providers_of = dict(providers_of)
    changed = {}
    for provider_id in gone:
        place = providers.get(provider_id)
        if place is not None:
            members = changed.setdefault(place[1],
                                         set(providers_of.get(place[1], ())))
            members.discard(provider_id)
    for provider_id, place in placed.items():
        changed.setdefault(place[1], set(providers_of.get(place[1], ()))).add(
            provider_id)
    for root_id, members in changed.items():
        if members:
            providers_of[root_id] = sorted(members)
        else:
            providers_of.pop(root_id, None)
    if len(providers_of) != len(roots) or not all(
            root_id in providers_of for root_id in changed):
        roots = sorted(providers_of)
    return roots, providers_of


def _patched_usage(used, gone_lines, new_lines):
    """(``used`` ({provider id: {rc id: amount}}) less the allocation lines
    gone, plus those new, the ids of the providers whose usage changed); a
    new dict, sharing the unchanged providers'."""
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
    return used, set(changed)


class _Lines:
    """A table read as one text value, one line per row (see
    _query): compared whole with the last read of the same table,
    which is cheap, and as a set of lines only when it differs. Lines
    brought up to date from the rows written since (written) have no
    text, only their lines by row id."""

    __slots__ = ('text', '_lines', '_by_id')

    def __init__(self, text, by_id=None):
        self.text = None if by_id is not None else (text or '')
        self._lines = None
        #: {row id (text): line}, made when first brought up to date (and
        #: kept, for the next time this read is).
        self._by_id = by_id

    @property
    def lines(self):
        if self._lines is None:
            if self.text is None:
                self._lines = frozenset(self._by_id.values())
            else:
                self._lines = (frozenset(self.text.split('\n')) if self.text
                               else frozenset())
        return self._lines

    def changes_since(self, last):
        """(lines gone, lines new) since the ``last`` read. After nothing
        read, every line is new and no set is made: a process whose cloud
        stays at rest never keeps one (at 5,000 hosts, 8 MB of lines)."""
        if self.text is not None and self.text == last.text:
            return (), ()
        if last.text == '':
            return (), self.text.split('\n') if self.text else ()
        return last.lines - self.lines, self.lines - last.lines

    def written(self, text, rows):
        """(These lines with the rows written since, ``text`` (their
        lines now), lines gone, lines new); None when the table's
        ``rows`` now say some row was deleted since."""
        by_id = self._by_id
        if by_id is None:
            # From the text: no set of lines is made (see changes_since).
            by_id = self._by_id = {line.split(' ', 1)[0]: line
                                   for line in self.text.split('\n')
                                   if line}
        gone, new = [], []
        for line in text.split('\n') if text else ():
            was = by_id.get(line.split(' ', 1)[0])
            if was != line:
                new.append(line)
                if was is not None:
                    gone.append(was)
        if len(by_id) + len(new) - len(gone) != rows:
            return None
        if not new:
            return self, (), ()
        by_id = dict(by_id)
        by_id.update((line.split(' ', 1)[0], line) for line in new)
        return _Lines(None, by_id), gone, new


def _line(*columns):
    """``columns`` as one line of text: the values separated by spaces,
    NULL as an empty value."""
    line = None
    for column in columns:
        value = sa.func.coalesce(sa.cast(column, sa.Text), '')
        line = value if line is None else line.concat(' ').concat(value)
    return line


def _text_lines(*columns):
    """A select of ``columns`` aggregated as text: one line per row (see
    _line). (Comparing one text with the last read is far cheaper than
    making and comparing a tuple per row.)"""
    return sa.select(sa.func.aggregate_strings(_line(*columns), '\n'))


def _columns(ids_reused):
    """The columns of a provider's state line and of an allocation line."""
    return ((rp.c.id, rp.c.parent_provider_id, rp.c.root_provider_id,
             rp.c.generation, scope_reads.identity(ids_reused)),
            (alloc.c.id, alloc.c.resource_provider_id,
             alloc.c.resource_class_id, alloc.c.used))


def _in_scope(scope, state, usage):
    """The state and usage selects restricted to ``scope``."""
    return (state.where(*scope.conditions(rp)),
            scope.of_providers(usage, alloc.c.resource_provider_id))


#: PostgreSQL: which transactions a statement sees, as text (a request
#: asks it in its first statement: candidates.read_known).
TRANSACTIONS_SEEN = sa.cast(sa.func.pg_current_snapshot(), sa.Text)
_TRANSACTIONS_SEEN = sa.select(TRANSACTIONS_SEEN)


@functools.cache
def _query(ids_reused, scope, with_transactions_seen=False):
    """The state of every provider in ``scope`` and every allocation
    against them, as two text values (see _Lines), and with
    ``with_transactions_seen`` the transactions the statement saw
    (PostgreSQL)."""
    columns = [select.scalar_subquery() for select in _in_scope(
        scope, *(_text_lines(*columns)
                 for columns in _columns(ids_reused)))]
    if with_transactions_seen:
        columns.append(_TRANSACTIONS_SEEN.scalar_subquery())
    return sa.select(*columns)


@functools.cache
def _mysql_queries(ids_reused, scope):
    """MySQL/MariaDB: the lines of _query, one row each. GROUP_CONCAT
    silently cuts its result at max_allowed_packet (16 MiB by default),
    which a large cloud's allocations exceed."""
    return _in_scope(scope, *(sa.select(_line(*columns))
                              for columns in _columns(ids_reused)))


def _mysql_texts(conn, ids_reused, scope, params):
    return tuple('\n'.join(row[0] for row in scope_reads.rows(
        conn, query, params)) for query in _mysql_queries(ids_reused, scope))
