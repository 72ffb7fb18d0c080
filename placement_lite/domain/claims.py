"""Claims (microversion 1.43): the best allocation candidate of a
candidates query, allocated to one or several consumers in one
transaction, so that no other scheduler can take it between the asking
and the claiming.

A claim searches (engine.claim_order: the best candidates by the rank
key), then, in one write transaction (``Database.write``), locks and
checks the consumers as ``PUT /allocations`` does and walks the
candidates in rank order, from the dispersion's starting point: each is
written through the allocation write path (domain.allocations:
allocations written, providers locked NOWAIT, capacity checked under the
locks, generations bumped) inside a savepoint. A candidate lost to a
concurrent writer (its capacity taken since the search, its providers
held by another transaction, a generation moved) is rolled back to the
savepoint and the next one is tried. When every candidate was lost, the
transaction is rolled back and the claim searches again, at most
SEARCHES times in all; when some were only held by another transaction,
it first waits for them (db.locks) and walks again.

A batch (several consumers) is all or nothing, in the same transaction:
the consumers take candidates in body order, each walking from the
candidate after the one the last took (so a batch spreads over the best
candidates in rank order), and with ``trees=distinct`` none takes a
candidate in a tree another took (anti-affinity).

With ``trees=same_aggregate`` (affinity) the batch is packed into one
aggregate: the candidates are grouped by the aggregates that every tree
they use (the root of each provider they allocate from or map) is a
member of, and the batch walks one aggregate's candidates as a batch
walks them all, aggregate after aggregate in the order of their best
candidates, each walk in a savepoint of its own, until one holds the
whole batch.
"""

import contextlib
import dataclasses

from placement_lite import engine
from placement_lite import errors
from placement_lite.db import aggregates as aggregates_db
from placement_lite.db import locks
from placement_lite.domain import allocations
from placement_lite.domain import consumers

#: Candidates a search gives a claim beyond one per consumer, when the
#: query has no limit: a single claim tries the best 16.
SPARE_CANDIDATES = 15
#: Searches a claim makes at most before it answers that its candidates
#: were all taken by concurrent claims.
SEARCHES = 3
#: Candidates a search gives a claim with ``trees=same_aggregate`` when
#: the query has no limit: the best AFFINITY_CANDIDATES, or
#: AFFINITY_CANDIDATES_PER_CONSUMER per consumer when that is more. The
#: ranked list interleaves the aggregates (every tree's best candidate
#: comes before any tree's second), so a batch finds its consumers' worth
#: of candidates within one aggregate only far down the list: 1,000 is
#: the limit nova's scheduler asks of GET /allocation_candidates, whose
#: ranked search is measured at that bound (docs/benchmark.md); 16 per
#: consumer keeps, for the largest batches, the ratio a single claim has
#: (its best 16).
AFFINITY_CANDIDATES = 1000
AFFINITY_CANDIDATES_PER_CONSUMER = 16
#: ``trees``: consumers of a batch may share trees; each in another tree;
#: all in trees of one aggregate.
ANY = 'any'
DISTINCT = 'distinct'
SAME_AGGREGATE = 'same_aggregate'

WORDING = dataclasses.replace(
    allocations.POST_WORDING,
    concurrent='Allocation candidates changed while attempting to claim '
               'one: {}')


@dataclasses.dataclass
class Claimed:
    """What one consumer was given."""

    consumer_uuid: str
    #: {provider uuid: {resource class: amount}}.
    allocations: dict
    #: {suffix: [provider uuid, ...]}.
    mappings: dict
    #: The consumer's generation after the claim.
    generation: int


@dataclasses.dataclass
class Claims:
    #: A Claimed per consumer, in the order of the request.
    claimed: list
    #: Candidates tried and refused at commit before these were claimed:
    #: taken by concurrent writers (or by the batch's earlier consumers).
    refused: int


@dataclasses.dataclass(frozen=True)
class _Offer:
    """One candidate, by provider uuid."""

    allocations: dict
    mappings: dict
    #: The root id of the tree it is built in.
    tree: int
    #: The ids of every provider it allocates from or maps.
    providers: frozenset


class _AllLost(Exception):
    """No candidate was left for the consumer ``index`` of the batch, after
    ``refused`` were tried (``busy``: the last locks.Busy met, if any):
    the transaction is rolled back and the claim searches again, or first
    waits for the rows held."""

    def __init__(self, index, refused, busy=None):
        super().__init__(index, refused, busy)
        self.index = index
        self.refused = refused
        self.busy = busy


def claim(ctx, request, claims, trees=ANY):
    """Allocate the best candidates of ``request`` (a CandidateRequest) to
    the consumers of ``claims`` (consumers.ConsumerClaim, their
    allocations left empty), all or none; Claims. 409 when nothing fits
    (placement_lite.claim.nothing_fits, with explain's reasons; for a
    batch, also when in some search a consumer after the first found no
    candidate left) or when every candidate of each search was taken
    concurrently before the first consumer could take one
    (placement.concurrent_update). ``trees``: ANY, DISTINCT or
    SAME_AGGREGATE."""
    if trees == DISTINCT and request.limit is not None and (
            request.limit < len(claims)):
        raise errors.BadRequest(
            'limit=%d is fewer than the %d consumers of a claim with '
            'trees=distinct.' % (request.limit, len(claims)),
            code=errors.QUERYPARAM_BAD_VALUE)
    bound = _bound(request, len(claims), trees)
    refused = 0
    # The furthest consumer of the batch a search found nothing left for.
    furthest = 0
    for _search in range(SEARCHES):
        order = engine.claim_order(ctx.db, ctx.conf, request, bound)
        offers = _offers(order.found)
        _require_enough(ctx, request, bound, offers, len(claims), trees)
        walks = _walks(ctx, offers, order.start, bound, trees)
        try:
            claimed, refused_now = allocations.in_fresh_transactions(
                ctx.db, WORDING, lambda conn: _take(
                    conn, ctx.conf, claims, offers, walks, trees))
        except _AllLost as all_lost:
            refused += all_lost.refused
            furthest = max(furthest, all_lost.index)
            continue
        return Claims(claimed, refused + refused_now)
    if furthest and trees == SAME_AGGREGATE:
        raise _nothing_fits(
            'No aggregate among the trees of the best %d candidates holds '
            'the %d consumers together (trees=same_aggregate).'
            % (bound, len(claims)))
    if furthest:
        raise _nothing_fits(
            'The %d consumers do not fit together: no candidate among the '
            'best %d was left for consumer %d after the claims of those '
            'before it (%d searches).'
            % (len(claims), bound, furthest + 1, SEARCHES))
    raise errors.Conflict(WORDING.concurrent.format(
        'the best %d candidates were taken by concurrent writers in each '
        'of %d searches' % (bound, SEARCHES)),
        code=errors.CONCURRENT_UPDATE)


def _bound(request, count, trees):
    """How many of the best candidates each search gives a claim of
    ``count`` consumers: the query's limit, else as many as ``trees``
    needs (SPARE_CANDIDATES, AFFINITY_CANDIDATES)."""
    if request.limit:
        return request.limit
    if trees == SAME_AGGREGATE:
        return max(AFFINITY_CANDIDATES,
                   AFFINITY_CANDIDATES_PER_CONSUMER * count)
    return count + SPARE_CANDIDATES


def _offers(found):
    """An _Offer per candidate of ``found`` (engine.Candidates), in
    order."""
    uuids = found.uuids
    return [_Offer({uuids[p]: dict(resources)
                    for p, resources in candidate.allocations.items()},
                   {suffix: sorted(uuids[p] for p in providers)
                    for suffix, providers in candidate.mappings.items()},
                   candidate.anchor,
                   frozenset(candidate.allocations).union(
                       *candidate.mappings.values()))
            for candidate in found.allocation_requests]


def _walks(ctx, offers, start, bound, trees):
    """The walks a batch may take, each a list of indexes into
    ``offers`` in the order the consumers try them, tried in turn until
    one holds the whole batch.

    With ``trees`` any or distinct, one: every candidate, from ``start``
    (the dispersion's) and wrapping around. With same_aggregate, one per
    aggregate that every tree of some candidate is a member of, of those
    candidates in that same order; the aggregate whose first candidate
    comes first leads (of aggregates sharing their first, the one whose
    uuid sorts first). A candidate using a sharing provider counts the
    sharing provider's root among its trees: it must be a member too.
    Membership is read from the primary as it is now, not locked (as
    member_of's is not). 409 nothing fits when no candidate has all its
    trees in one aggregate."""
    walk = [(start + step) % len(offers) for step in range(len(offers))]
    if trees != SAME_AGGREGATE:
        return [walk]
    with ctx.db.reader() as conn:
        of_root = aggregates_db.aggregates_of_roots(
            conn, frozenset().union(*(offer.providers for offer in offers)))
    by_aggregate = {}
    for index in walk:
        shared = frozenset.intersection(
            *(of_root[provider] for provider in offers[index].providers))
        for aggregate in sorted(shared):
            by_aggregate.setdefault(aggregate, []).append(index)
    if not by_aggregate:
        raise _nothing_fits(
            'No candidate among the best %d has all its trees in one '
            'aggregate (trees=same_aggregate).' % bound)
    return list(by_aggregate.values())


def _nothing_fits(detail):
    return errors.Conflict(detail, code=errors.CLAIM_NOTHING_FITS)


def _require_enough(ctx, request, bound, offers, count, trees):
    """409 nothing fits when the search found no candidate (saying why,
    from explain), or, with ``trees=distinct``, fewer trees than
    consumers."""
    if not offers:
        explained = engine.claim_order(
            ctx.db, ctx.conf, dataclasses.replace(request, explain=True),
            bound).found.explanation
        raise _nothing_fits('No allocation candidate fits the request: %s.'
                            % '; '.join(explained.why_empty()))
    if trees == DISTINCT:
        distinct = len({offer.tree for offer in offers})
        if distinct < count:
            raise _nothing_fits(
                'Only %d trees among the best %d candidates can serve the '
                'request: the %d consumers need one tree each '
                '(trees=distinct).' % (distinct, bound, count))


def _take(conn, conf, claims, offers, walks, trees):
    """The body of a claim's transaction: ([Claimed], candidates refused
    in every walk tried), from the first of ``walks`` (see _walks) that
    holds every consumer; with same_aggregate each walk is in a savepoint,
    rolled back when it does not. Raises _AllLost, or the last locks.Busy
    met (Database.write then waits for those rows and runs it again), when
    none does."""
    owners = consumers.ensure_owners(conn, conf, claims)
    existing = consumers.lock_consumers(conn, claims)
    consumers.check_generations(claims, existing)
    states = consumers.record_consumers(conn, conf, claims, owners, existing)
    lost = []
    for walk in walks:
        savepoint = conn.begin_nested() if trees == SAME_AGGREGATE else (
            contextlib.nullcontext())
        try:
            with savepoint:
                claimed, refused = _walk(conn, claims, offers, walk, states,
                                         trees)
        except _AllLost as stuck:
            lost.append(stuck)
            continue
        return claimed, refused + sum(stuck.refused for stuck in lost)
    busy = [stuck.busy for stuck in lost if stuck.busy is not None]
    if busy:
        raise busy[-1]
    raise _AllLost(max(stuck.index for stuck in lost),
                   sum(stuck.refused for stuck in lost))


def _walk(conn, claims, offers, walk, states, trees):
    """Each consumer of ``claims`` in turn takes the first candidate of
    ``walk`` (indexes into ``offers``) that is written without refusal,
    walking from the one after the candidate the consumer before it took
    (wrapping around); with distinct, none in a tree taken already.
    ([Claimed], candidates refused); _AllLost when a consumer finds none
    left."""
    taken_trees = set()
    claimed = []
    refused = 0
    position = 0
    for index, claim in enumerate(claims):
        busy = None
        for step in range(len(walk)):
            at = (position + step) % len(walk)
            offer = offers[walk[at]]
            if trees == DISTINCT and offer.tree in taken_trees:
                continue
            try:
                with conn.begin_nested():
                    allocations.replace_allocations(
                        conn, [dataclasses.replace(
                            claim, allocations=offer.allocations)],
                        states, WORDING)
            except locks.Busy as held:
                busy = held
            except (allocations.CapacityExceeded,
                    allocations.ProviderGenerationChanged):
                pass
            else:
                claimed.append(Claimed(
                    claim.uuid, offer.allocations, offer.mappings,
                    states[claim.uuid].generation + 1))
                taken_trees.add(offer.tree)
                position = at + 1
                break
            refused += 1
        else:
            raise _AllLost(index, refused, busy)
    return claimed, refused
