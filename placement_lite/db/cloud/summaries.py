"""Provider summaries: the providers a request shows, and their members
as the answers render them, kept rendered between requests.

The HTTP layer renders a provider's member (its summary as JSON bytes);
what it rendered in one form (the one it names, that of the newest
microversions) is kept in one bytes value, every provider's member after
the other (``Arena``), and a request showing consecutive providers takes
them as one slice. A provider whose stock, usage or place changed is
rendered again and kept apart until the arena is made again. Made by the
process that reads the whole cloud first (the uwsgi master, before it
forks its workers), the arena stays in pages the workers share.
"""

import dataclasses
import typing

import numpy as np

from placement_lite.db.cloud import store as kept

#: The arena is made again once the members rendered since are this many
#: bytes, or more than a quarter of its own.
REMAKE_AFTER = 8 * 1024 * 1024
_SEPARATOR = b', '


@dataclasses.dataclass(slots=True)
class ProviderSummary:
    """One provider as provider summaries show it."""

    uuid: str
    parent_uuid: typing.Optional[str]
    root_uuid: str
    #: ((resource class name, capacity, used), ...) in class id order.
    resources: tuple
    #: Trait names in trait id order (standard traits first, then custom
    #: ones as created), the order the reference shows.
    trait_names: tuple


class Arena:
    """The members of every provider in one form, each followed by a
    separator, under the class names they show."""

    def __init__(self, form, class_names):
        #: How each member is rendered (the renderer's, opaque here).
        self.form = form
        self.class_names = class_names
        self.text = b''
        #: Where each row's member starts and ends in ``text``; a row
        #: whose member there is not current has ``current`` false.
        self.starts = np.zeros(0, np.int64)
        self.ends = np.zeros(0, np.int64)
        self.current = np.zeros(0, bool)
        #: {row: member and separator} rendered since the text was made.
        self.since = {}
        self._since_bytes = 0

    def forget(self, rows):
        """The members of ``rows`` are no longer current."""
        current = self.current
        for row in rows:
            if row < len(current):
                current[row] = False
            member = self.since.pop(row, None)
            if member is not None:
                self._since_bytes -= len(member)

    def renumbered(self, live):
        """The store kept only the rows ``live``, now numbered 0, 1..."""
        inside = live[live < len(self.current)]
        self.starts, self.ends, self.current = (
            self.starts[inside], self.ends[inside], self.current[inside])
        new_row = {int(old): new for new, old in enumerate(live.tolist())}
        self.since = {new_row[row]: member for row, member
                      in self.since.items() if row in new_row}

    def members(self, rows, render, piece):
        """The members of ``rows`` (sorted, no repeats) joined as one
        answer shows them, in pieces of ``piece`` bytes (see in_pieces);
        ``render(row)``: one member, when not kept.
        Rows whose members are kept one after the other in ``text`` are
        taken as one slice (found with arrays: an answer shows thousands
        of providers in a few runs)."""
        rows = np.asarray(rows, np.int64)
        current = np.zeros(len(rows), bool)
        starts = np.full(len(rows), -1, np.int64)
        ends = starts.copy()
        inside = np.flatnonzero(rows < len(self.current))
        current[inside] = self.current[rows[inside]]
        starts[inside] = self.starts[rows[inside]]
        ends[inside] = self.ends[rows[inside]]
        # A run of kept members starts where the one before is not kept
        # or does not end where this one starts.
        follows = np.zeros(len(rows), bool)
        follows[1:] = current[1:] & current[:-1] & (starts[1:] == ends[:-1])
        breaks = np.flatnonzero(~follows)
        run_ends = np.append(breaks[1:], len(rows)) - 1
        parts = []
        # Slices of a view: the text's bytes are copied once, when joined.
        text = memoryview(self.text)
        for first, last in zip(breaks.tolist(), run_ends.tolist()):
            if current[first]:
                parts.append(text[starts[first]:ends[last]])
                continue
            row = int(rows[first])
            member = self.since.get(row)
            if member is None:
                member = self.since[row] = render(row) + _SEPARATOR
                self._since_bytes += len(member)
            parts.append(member)
        if parts:
            parts[-1] = memoryview(parts[-1])[:-len(_SEPARATOR)]
        return in_pieces(parts, piece)

    def worth_remaking(self):
        return self._since_bytes > max(REMAKE_AFTER, len(self.text) // 4)

    def remake(self, rows, render):
        """The text made again of the members of ``rows`` (every live
        row): those kept, and the others rendered now."""
        size = int(rows.max()) + 1 if len(rows) else 0
        starts = np.zeros(size, np.int64)
        ends = np.zeros(size, np.int64)
        current = np.zeros(size, bool)
        parts = []
        at = 0
        for row in rows.tolist():
            if row < len(self.current) and self.current[row]:
                member = self.text[self.starts[row]:self.ends[row]]
            else:
                member = self.since.get(row) or render(row) + _SEPARATOR
            parts.append(member)
            starts[row], ends[row] = at, at + len(member)
            current[row] = True
            at += len(member)
        self.text = b''.join(parts)
        self.starts, self.ends, self.current = starts, ends, current
        self.since = {}
        self._since_bytes = 0


class Shown:
    """The providers one request shows: ``ids`` (an array, in order) of
    providers kept by the Cloud ``kept``, with ``class_names`` ({rc id:
    name}) as the request read them. (By id: the store may number its
    rows again before a read: see store.compact_if_worth_it.)"""

    def __init__(self, kept, ids, class_names):
        self.kept = kept
        self.store = kept.store
        self.ids = ids
        self.class_names = class_names

    @property
    def rows(self):
        return self.store.rows_of(self.ids)

    def __len__(self):
        return len(self.ids)

    def uuids(self):
        """{provider id: uuid}."""
        return dict(zip(self.ids.tolist(), self.store.uuids(self.rows)))

    def only(self, provider_ids):
        """Those of ``provider_ids`` only."""
        return Shown(self.kept, self.ids[np.isin(self.ids, np.fromiter(
            provider_ids, np.int64, len(provider_ids)))], self.class_names)

    def summary(self, row):
        """The ProviderSummary of ``row``."""
        store = self.store
        rows = store.rows
        parent = int(rows.parent[row])
        names = self.class_names
        return ProviderSummary(
            store.uuid(row),
            None if parent == kept.DEAD else store.uuid(store.row(parent)),
            store.uuid(store.row(int(rows.root[row]))),
            tuple((names[rc_id], capacity, used) for rc_id, capacity, used,
                  *_units in store.inventories(row)),
            store.trait_names(row))

    def items(self):
        """[(provider id, ProviderSummary)], in provider id order."""
        return [(id_, self.summary(row))
                for id_, row in zip(self.ids.tolist(), self.rows.tolist())]

    def rendered(self, form, render, piece):
        """The members of the providers shown, joined (b', '), as
        ``render(summary, form)`` renders one, in pieces of ``piece``
        bytes (see in_pieces); kept in the Cloud's arena for the form it
        keeps (see render_ahead)."""
        store = self.store
        arena = self.kept.arena
        if arena is None or arena.form != form:
            return in_pieces([b', '.join(render(self.summary(row), form)
                                         for row in self.rows.tolist())],
                             piece)
        with store.lock:
            if arena.class_names != self.class_names:
                arena = self.kept.arena = Arena(form, self.class_names)
            arena.forget(store.unrendered)
            store.unrendered = set()

            def rendered(row):
                return render(self.summary(row), form)
            members = arena.members(self.rows, rendered, piece)
            if arena.worth_remaking():
                arena.remake(store.live_rows(), rendered)
            return members

    def render_ahead(self, form, render):
        """Render every provider shown into the Cloud's arena for
        ``form``: the form later answers find kept."""
        store = self.store
        with store.lock:
            arena = self.kept.arena
            if (arena is not None and arena.form == form
                    and arena.class_names == self.class_names):
                # Rendered by the process that wrote the store mapped.
                arena.forget(store.unrendered)
                store.unrendered = set()
                return
            arena = self.kept.arena = Arena(form, self.class_names)
            store.unrendered = set()
            arena.remake(self.rows,
                               lambda row: render(self.summary(row), form))


def in_pieces(parts, piece):
    """The bytes of ``parts`` (bytes-like, in order) as bytes pieces of
    ``piece`` bytes (the last one shorter), a part cut where a piece
    ends: what an answer's body sends one after the other, rather than
    one value of tens of megabytes."""
    pieces = []
    group = []
    held = 0
    for part in parts:
        part = memoryview(part)
        while held + len(part) >= piece:
            taken = piece - held
            group.append(part[:taken])
            pieces.append(b''.join(group))
            group, held, part = [], 0, part[taken:]
        if len(part):
            group.append(part)
            held += len(part)
    if group:
        pieces.append(b''.join(group))
    return pieces
