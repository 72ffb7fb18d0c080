"""The providers a process keeps, in packed columns: where each is, what
it has (its stock: uuid, inventories, trait names) and what it uses.

One row per provider, one slot per inventory; no Python object per
provider, inventory or allocation. Rows and slots are appended; a row or
slot that goes is marked dead (root and row -1) and left in place until
the columns are compacted. A provider's slots are contiguous and in
resource class id order, the order summaries show them in.

Everything here is patched from what a read found (reads.py): a
provider's place and generation from its state row, its stock when that
generation (or, where ids are reused, its creation time) changed, its
usage from the sums read for it, set and never added to, so that a
patch is the same whichever read brings it.
"""

import dataclasses
import threading
import zlib

import numpy as np

from placement_lite.db.cloud import columns

#: A row's or a slot's root or row when it is dead.
DEAD = -1
#: The identity of a provider with no creation time (SQLite): its stock is
#: read again every time, as the stock of an unknown provider.
NO_IDENTITY = -1
#: Capacities beyond these bounds are kept at them for comparisons (any
#: amount a search compares is at most 2**31 - 1: see search.largest; a
#: tree's sum of thousands of them still fits 64 bits); their exact value
#: is kept aside for summaries.
CAPACITY_BOUND = 2 ** 52
#: What per_structure keeps at most (a few arrays of root ids each).
MADE_PER_STRUCTURE = 32
#: Rows and slots are compacted once the dead ones are more than this
#: share of them.
MOST_DEAD = 0.25


def identity_of(text):
    """A provider's identity from its creation time as text (see
    reads._identity): equal for equal texts in every process (a store is
    kept by one process and mapped by others: see shared), so not
    ``hash()``, which each process seeds its own way. Two checksums of
    the text in 63 bits, never negative: a sixth of the time a
    cryptographic digest takes (read for every provider of SQLite's
    whole cloud when it changed)."""
    if text is None:
        return NO_IDENTITY
    if text == '*':
        return 0
    encoded = text.encode()
    return (zlib.crc32(encoded) << 31) ^ zlib.adler32(encoded)


@dataclasses.dataclass
class Versions:
    """How far a Store has changed since it was made, four ways: each
    counter is bumped by the patches of its kind, and what is made of the
    store records the counter it was made at and is made again once the
    counter moved."""

    #: Patches that changed some provider (its stock, usage or place, or
    #: that it went): what was made of providers is good while none of
    #: them changed after the count it was made at (Store.changed_at).
    changes: int = 0
    #: Times the rows were numbered again (Store.compact_if_worth_it):
    #: rows noted before are looked up again by id.
    numbering: int = 0
    #: Changes of where providers are or what they have (rows or slots
    #: added, dead, moved, restocked): what is made of those (holders of
    #: a class, trees, the sets per_structure keeps) is made again.
    structure: int = 0
    #: Changes of structure or of usage: what is made of what providers
    #: keep free (tree orders) is made again.
    usage: int = 0


class Store:
    """The kept providers of one database (see the module's docstring).

    Writers hold ``lock``; readers take columns without it (a column grown
    or compacted is a new array: see columns)."""

    def __init__(self, sharing_trait=None):
        self.lock = threading.RLock()
        # Ids, generations and units are the schema's 32-bit integers.
        self.rows = columns.Columns(
            id=np.int32, parent=np.int32, root=np.int32,
            generation=np.int32, identity=np.int64, traits=np.int32,
            first=np.int32, count=np.int32, uuid='S36')
        self.slots = columns.Columns(
            row=np.int32, rc=np.int32, capacity=np.int64, used=np.int64,
            min_unit=np.int32, max_unit=np.int32, step_size=np.int32)
        #: Row of each provider id, DEAD for none.
        self.row_of = np.full(0, DEAD, np.int32)
        #: How far the store has changed, four ways (see Versions).
        self.versions = Versions()
        #: By provider id: ``versions.changes`` as the last patch that
        #: changed what the provider has, uses or where it is (or that it
        #: went) left it, set once the patch's values are written. What was
        #: made of providers read when ``versions.changes`` was C holds
        #: while none of them changed after C (see firsts).
        self.changed_at = np.zeros(0, np.int64)
        #: Trait names of each set, in trait id order: a row's ``traits``.
        self.trait_sets = [()]
        self._trait_set_index = {(): 0}
        #: Whether each trait set holds the sharing trait (see
        #: candidates.SHARING_TRAIT), set by the reader.
        self.sharing = np.zeros(1, bool)
        self.sharing_trait = sharing_trait
        #: {slot: its capacity} where it is beyond CAPACITY_BOUND.
        self.exact_capacities = {}
        #: {row: uuid} where it is not 36 ASCII characters.
        self.odd_uuids = {}
        self.live = 0
        self.dead_slots = 0
        #: {rc id: live slots of the class, by provider id}, made when first
        #: asked for at a structure version.
        self._holders = {}
        self._holders_structure = None
        #: {key: what per_structure made of the rows at _made_structure}.
        self._made = {}
        self._made_structure = None
        #: (live rows by root then id, sorted roots, where each starts).
        self._trees = None
        self._trees_structure = None
        #: Rows whose summary changed (stock, usage, place) since the
        #: summaries last asked (see summaries.Arena).
        self.unrendered = set()
        #: PostgreSQL: the transactions the last read of the whole cloud
        #: saw (``pg_current_snapshot()`` as text); None before one, and
        #: elsewhere.
        self.transactions_seen = None
        #: PostgreSQL: whether the last read of the whole cloud found the
        #: providers written logged (see reads._written_since).
        self.writes_logged = False
        #: MySQL, SQLite: the texts of the last read of the whole cloud.
        self.texts = None

    def whole_read(self, transactions_seen):
        """The whole cloud was just read, seeing ``transactions_seen``."""
        self.transactions_seen = transactions_seen

    # -- What is kept, as asked for -----------------------------------

    def rows_of(self, provider_ids):
        """Rows of ``provider_ids`` (an int64 array), DEAD for unknown."""
        row_of = self.row_of
        ids = np.asarray(provider_ids, np.int64)
        rows = np.full(len(ids), DEAD, np.int32)
        known = ids < len(row_of)
        rows[known] = row_of[ids[known]]
        return rows

    def row(self, provider_id):
        row_of = self.row_of
        return int(row_of[provider_id]) if provider_id < len(row_of) else DEAD

    def uuid(self, row):
        odd = self.odd_uuids.get(row)
        return odd if odd is not None else self.rows.uuid[row].decode()

    def uuids(self, rows):
        """The uuids of ``rows`` (an array), in order."""
        found = self.rows.uuid[rows].astype('U36').tolist()
        if self.odd_uuids:
            for at, row in enumerate(rows.tolist()):
                odd = self.odd_uuids.get(row)
                if odd is not None:
                    found[at] = odd
        return found

    def trait_names(self, row):
        return self.trait_sets[self.rows.traits[row]]

    def inventories(self, row):
        """(rc id, capacity, used, min_unit, max_unit, step_size) of each
        inventory of ``row``, in class id order."""
        slots = self.slots
        first = int(self.rows.first[row])
        found = []
        for slot in range(first, first + int(self.rows.count[row])):
            found.append((int(slots.rc[slot]), self.capacity(slot),
                          int(slots.used[slot]), int(slots.min_unit[slot]),
                          int(slots.max_unit[slot]),
                          int(slots.step_size[slot])))
        return found

    def capacity(self, slot):
        exact = self.exact_capacities.get(slot)
        return exact if exact is not None else int(self.slots.capacity[slot])

    def live_rows(self):
        """Every live row, in row order."""
        return np.flatnonzero(self.rows.root[:self.rows.size] != DEAD)

    def per_structure(self, key, make):
        """What ``make()`` gives, kept by ``key`` until the structure
        changes (Versions.structure; at most MADE_PER_STRUCTURE kept: then
        they are made again; shared: never change it)."""
        structure = self.versions.structure
        if self._made_structure != structure:
            self._made = {}
            self._made_structure = structure
        made = self._made.get(key)
        if made is None:
            made = make()
            # Kept only if made of the rows it is kept for.
            if self.versions.structure == structure == (
                    self._made_structure):
                if len(self._made) >= MADE_PER_STRUCTURE:
                    self._made = {}
                self._made[key] = made
        return made

    def holders(self, rc_id):
        """Live slots of ``rc_id``, by provider id (shared: never change
        it)."""
        if self._holders_structure != self.versions.structure:
            self._holders = {}
            self._holders_structure = self.versions.structure
        made = self._holders.get(rc_id)
        if made is None:
            slots = self.slots
            found = np.flatnonzero(
                (slots.rc[:slots.size] == rc_id)
                & (slots.row[:slots.size] != DEAD)).astype(np.int32)
            ids = self.rows.id[slots.row[found]]
            made = self._holders[rc_id] = found[np.argsort(ids,
                                                           kind='stable')]
        return made

    def slots_of(self, rows, rc_id):
        """Slots of ``rc_id`` of ``rows`` (in the order of ``rows``)."""
        every = self._slots_of_rows(rows)
        return every[self.slots.rc[every] == rc_id].astype(np.int32)

    def trees(self):
        """(Live rows by root id then provider id, the sorted root ids,
        where each root's rows start in the first): made once per
        structure version."""
        if self._trees_structure != self.versions.structure:
            live = self.live_rows()
            rows = self.rows
            order = live[np.lexsort((rows.id[live], rows.root[live]))]
            roots, starts = np.unique(rows.root[order], return_index=True)
            self._trees = (order, roots, starts)
            self._trees_structure = self.versions.structure
        return self._trees

    def tree_rows(self, root_ids):
        """Live rows of the trees ``root_ids`` (an int64 array), by root
        then provider id."""
        order, roots, starts = self.trees()
        at = np.searchsorted(roots, root_ids)
        found = (at < len(roots))
        found[found] = roots[at[found]] == np.asarray(root_ids)[found]
        ends = np.append(starts[1:], len(order))
        picked = [order[starts[i]:ends[i]] for i in at[found]]
        return np.concatenate(picked) if picked else np.zeros(0, np.int64)

    # -- Patches ------------------------------------------------------

    def placed(self, ids, parents, roots, generations, identities):
        """For the state rows just read (arrays, one element per
        provider): (their rows, whether each row's stock is current).
        Where it is, parent and root are set now; where it is not (the
        provider unknown, or its generation or identity changed) its stock
        must be read again (restock)."""
        rows = self.rows_of(ids)
        known = rows != DEAD
        current = known.copy()
        kept = rows[known]
        current[known] = (
            (self.rows.generation[kept] == generations[known])
            & (self.rows.identity[kept] == identities[known])
            & (identities[known] != NO_IDENTITY))
        at = rows[current]
        moved = ((self.rows.parent[at] != parents[current])
                 | (self.rows.root[at] != roots[current]))
        if moved.any():
            with self.lock:
                moving = at[moved]
                self.rows.parent[moving] = parents[current][moved]
                self.rows.root[moving] = roots[current][moved]
                self.unrendered.update(moving.tolist())
                self._restructured()
                self._changed(self.rows.id[moving])
        return rows, current

    def regenerated(self, rows, current, generations, identities):
        """``current`` (as placed gives it, for the state rows just read)
        with every kept provider of the same identity that it does not
        count current now current at its new generation: for a caller
        that knows their stocks unchanged (only allocations moved their
        generations)."""
        moved = ~current & (rows != DEAD)
        at = rows[moved]
        moved[moved] = ((self.rows.identity[at] == identities[moved])
                        & (identities[moved] != NO_IDENTITY))
        with self.lock:
            self.rows.generation[rows[moved]] = generations[moved]
        return current | moved

    def restock(self, ids, parents, roots, generations, identities, uuids,
                inventories, trait_names):
        """Keep the stock just read of the providers ``ids`` (arrays, as
        placed takes them): ``uuids`` {id: uuid}, ``inventories`` {id:
        [(rc id, capacity, min_unit, max_unit, step_size), ...] in class
        id order}, ``trait_names`` {id: (name, ...) in trait id order}.
        A provider without a uuid was deleted since its state was read:
        it goes. Returns the rows of those kept (-1 for those gone)."""
        found = np.array([int(id_) in uuids for id_ in ids.tolist()], bool)
        with self.lock:
            self.remove(ids[~found])
            rows = np.full(len(ids), DEAD, np.int32)
            known = self.rows_of(ids) != DEAD
            for index in np.flatnonzero(found & known).tolist():
                id_ = int(ids[index])
                rows[index] = self._stock_row(
                    id_, int(parents[index]), int(roots[index]),
                    int(generations[index]), int(identities[index]),
                    uuids[id_], inventories.get(id_, ()),
                    trait_names.get(id_, ()))
            new = found & ~known
            rows[new] = self._new_rows(
                ids[new], parents[new], roots[new], generations[new],
                identities[new], uuids, inventories, trait_names)
            self._restructured()
            self._changed(ids)
        return rows

    def _new_rows(self, ids, parents, roots, generations, identities,
                  uuids, inventories, trait_names):
        """Rows for the providers ``ids``, none kept yet (what restock
        takes): one write per column, not one per provider (a process
        starting reads every provider of the cloud)."""
        rows = self.rows
        first = rows.add(len(ids))
        at = np.arange(first, first + len(ids))
        for name, values in (('id', ids), ('parent', parents),
                             ('root', roots), ('generation', generations),
                             ('identity', identities)):
            getattr(rows, name)[at] = values
        texts = [uuids[id_] for id_ in ids.tolist()]
        rows.uuid[at] = [text.encode('ascii', 'replace') for text in texts]
        for row, text in zip(at.tolist(), texts):
            if len(text) != 36 or not text.isascii():
                self.odd_uuids[row] = text
        rows.traits[at] = [self._trait_set(trait_names.get(id_, ()))
                           for id_ in ids.tolist()]
        counts = [len(inventories.get(id_, ())) for id_ in ids.tolist()]
        rows.count[at] = counts
        slots = self.slots
        start = slots.add(sum(counts))
        rows.first[at] = start + np.cumsum(counts) - counts
        every = [inventory for id_ in ids.tolist()
                 for inventory in inventories.get(id_, ())]
        held = np.arange(start, start + len(every))
        slots.row[held] = np.repeat(at, counts)
        slots.used[held] = 0
        if every:
            rcs, capacities, min_units, max_units, steps = zip(*every)
            slots.rc[held] = rcs
            slots.min_unit[held] = min_units
            slots.max_unit[held] = max_units
            slots.step_size[held] = steps
            bounded = [capacity if -CAPACITY_BOUND <= capacity
                       <= CAPACITY_BOUND else None for capacity in capacities]
            for slot, capacity, within in zip(held.tolist(), capacities,
                                              bounded):
                if within is None:
                    self.exact_capacities[slot] = capacity
            slots.capacity[held] = [
                (CAPACITY_BOUND if capacity > 0 else -CAPACITY_BOUND)
                if within is None else within
                for capacity, within in zip(capacities, bounded)]
        self._index_all(ids, at)
        self.live += len(ids)
        self.unrendered.update(at.tolist())
        return at

    def _index_all(self, ids, rows):
        if len(ids):
            self._room_for_id(int(ids.max()))
            self.row_of[ids] = rows

    def _stock_row(self, id_, parent, root, generation, identity, uuid,
                   inventories, trait_names):
        rows = self.rows
        row = self.row(id_)
        if row == DEAD:
            row = rows.add(1)
            self._index(id_, row)
            rows.id[row] = id_
            rows.count[row] = 0
            self.live += 1
        elif rows.identity[row] != identity:
            # Another provider under the id of one deleted: nothing of
            # the one kept is its.
            self.slots.used[rows.first[row]:rows.first[row]
                            + rows.count[row]] = 0
        rows.parent[row] = DEAD if parent is None else parent
        rows.root[row] = root
        rows.generation[row] = generation
        rows.identity[row] = identity
        rows.traits[row] = self._trait_set(trait_names)
        self._set_uuid(row, uuid)
        self._set_inventories(row, inventories)
        self.unrendered.add(row)
        return row

    def _index(self, id_, row):
        self._room_for_id(id_)
        self.row_of[id_] = row

    def _room_for_id(self, id_):
        if id_ >= len(self.row_of):
            room = max(id_ + 1 + id_ // 4, 2 * len(self.row_of),
                       columns.MIN_ROOM)
            grown = np.full(room, DEAD, np.int32)
            grown[:len(self.row_of)] = self.row_of
            changed_at = np.zeros(room, np.int64)
            changed_at[:len(self.changed_at)] = self.changed_at
            self.row_of, self.changed_at = grown, changed_at

    def _changed(self, ids):
        """The providers ``ids`` (an array) changed: their values are
        written (see changed_at)."""
        self.versions.changes += 1
        ids = np.asarray(ids, np.int64)
        self.changed_at[ids[ids < len(self.changed_at)]] = (
            self.versions.changes)

    def _restructured(self):
        """Where providers are or what they have changed."""
        self.versions.structure += 1
        self.versions.usage += 1

    def _set_uuid(self, row, uuid):
        encoded = uuid.encode('ascii', 'replace')
        self.rows.uuid[row] = encoded
        if len(uuid) != 36 or encoded.decode('ascii', 'replace') != uuid:
            self.odd_uuids[row] = uuid
        else:
            self.odd_uuids.pop(row, None)

    def _trait_set(self, names):
        names = tuple(names)
        index = self._trait_set_index.get(names)
        if index is None:
            index = self._trait_set_index[names] = len(self.trait_sets)
            self.trait_sets.append(names)
            self.sharing = np.append(self.sharing,
                                     self.sharing_trait in names)
        return index

    def _set_inventories(self, row, inventories):
        """The slots of ``row``: its own overwritten when it holds the
        same classes, else new ones, each keeping the usage of its class."""
        rows, slots = self.rows, self.slots
        first, count = int(rows.first[row]), int(rows.count[row])
        classes = [rc_id for rc_id, *_ in inventories]
        if count and slots.rc[first:first + count].tolist() == classes:
            at = range(first, first + count)
        else:
            used = ({int(rc): int(amount) for rc, amount in zip(
                slots.rc[first:first + count], slots.used[first:first + count])}
                if count else {})
            if count:
                slots.row[first:first + count] = DEAD
                for slot in range(first, first + count):
                    self.exact_capacities.pop(slot, None)
                self.dead_slots += count
            new = slots.add(len(inventories))
            at = range(new, new + len(inventories))
            rows.first[row] = new
            rows.count[row] = len(inventories)
            for slot, rc_id in zip(at, classes):
                slots.row[slot] = row
                slots.rc[slot] = rc_id
                slots.used[slot] = used.get(rc_id, 0)
        for slot, (_rc, capacity, min_unit, max_unit, step_size) in zip(
                at, inventories):
            if -CAPACITY_BOUND <= capacity <= CAPACITY_BOUND:
                slots.capacity[slot] = capacity
                self.exact_capacities.pop(slot, None)
            else:
                slots.capacity[slot] = (CAPACITY_BOUND if capacity > 0
                                        else -CAPACITY_BOUND)
                self.exact_capacities[slot] = capacity
            slots.min_unit[slot] = min_unit
            slots.max_unit[slot] = max_unit
            slots.step_size[slot] = step_size

    def remove(self, ids):
        """Providers ``ids`` (an array) went."""
        rows = self.rows_of(ids)
        rows = rows[rows != DEAD]
        if not len(rows):
            return None
        with self.lock:
            for row in rows.tolist():
                first, count = int(self.rows.first[row]), int(
                    self.rows.count[row])
                self.slots.row[first:first + count] = DEAD
                self.dead_slots += count
                self.odd_uuids.pop(row, None)
            self.row_of[self.rows.id[rows]] = DEAD
            self.rows.root[rows] = DEAD
            self.live -= len(rows)
            self.unrendered.difference_update(rows.tolist())
            self._restructured()
            self._changed(ids)

    def set_usage(self, rows, used_rows, used_rcs, amounts):
        """Usage of ``rows`` (every provider a read covered): the sums
        ``amounts`` of the pairs (``used_rows``, ``used_rcs``) read, and
        nothing of any other class (a class used by a provider without an
        inventory of it shows nowhere)."""
        slots = self.slots
        every = self._slots_of_rows(rows)
        keys = (slots.row[every].astype(np.int64) << 32) | slots.rc[every]
        order = np.argsort(keys)
        wanted = (used_rows.astype(np.int64) << 32) | used_rcs
        at = np.searchsorted(keys[order], wanted)
        hit = at < len(order)
        hit[hit] = keys[order][at[hit]] == wanted[hit]
        used = np.zeros(len(every), np.int64)
        used[order[at[hit]]] = amounts[hit]
        changed = slots.used[every] != used
        if changed.any():
            with self.lock:
                slots.used[every[changed]] = used[changed]
                changed_rows = slots.row[every[changed]]
                self.unrendered.update(changed_rows.tolist())
                self.versions.usage += 1
                self._changed(self.rows.id[changed_rows])

    def _slots_of_rows(self, rows):
        """Every slot of ``rows``, row after row."""
        first = self.rows.first[rows]
        count = self.rows.count[rows].astype(np.int64)
        return (np.repeat(first - np.cumsum(count) + count, count)
                + np.arange(count.sum())).astype(np.int64)

    def compact_if_worth_it(self):
        """Rows and slots without the dead ones, once they are many: a
        cloud whose providers are restocked again and again (every
        inventory write) would grow without bound. Rows are numbered
        again: only before a read, and ``versions.numbering`` tells those
        holding rows (see view). Returns the rows kept, as they were
        numbered (None when nothing was compacted)."""
        rows, slots = self.rows, self.slots
        if (rows.size - self.live <= MOST_DEAD * rows.size
                and self.dead_slots <= MOST_DEAD * slots.size):
            return None
        live = self.live_rows()
        new_rows = rows.compacted(live)
        row_map = np.full(rows.size, DEAD, np.int64)
        row_map[live] = np.arange(len(live))
        live_slots = np.flatnonzero(slots.row[:slots.size] != DEAD)
        new_slots = slots.compacted(live_slots)
        new_slots.row[:len(live_slots)] = row_map[slots.row[live_slots]]
        slot_map = np.full(slots.size, DEAD, np.int64)
        slot_map[live_slots] = np.arange(len(live_slots))
        counted = new_rows.count[:len(live)] > 0
        new_rows.first[:len(live)][counted] = slot_map[
            rows.first[live][counted]]
        self.exact_capacities = {int(slot_map[slot]): value for slot, value
                                 in self.exact_capacities.items()
                                 if slot_map[slot] != DEAD}
        self.odd_uuids = {int(row_map[row]): uuid
                          for row, uuid in self.odd_uuids.items()}
        self.unrendered = {int(row_map[row]) for row in self.unrendered
                           if row_map[row] != DEAD}
        row_of = np.full(len(self.row_of), DEAD, np.int32)
        row_of[new_rows.id[:len(live)]] = np.arange(len(live))
        self.rows, self.slots, self.row_of = new_rows, new_slots, row_of
        self.dead_slots = 0
        self.versions.numbering += 1
        self._restructured()
        return live

    def nbytes(self):
        return (self.rows.nbytes() + self.slots.nbytes()
                + self.row_of.nbytes)
