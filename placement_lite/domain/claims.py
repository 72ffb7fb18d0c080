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
"""

import dataclasses

from placement_lite import engine
from placement_lite import errors
from placement_lite.db import locks
from placement_lite.domain import allocations
from placement_lite.domain import consumers

#: Candidates a search gives a claim beyond one per consumer, when the
#: query has no limit: a single claim tries the best 16.
SPARE_CANDIDATES = 15
#: Searches a claim makes at most before it answers that its candidates
#: were all taken by concurrent claims.
SEARCHES = 3
#: ``trees``: consumers of a batch may share trees; each in another tree.
ANY = 'any'
DISTINCT = 'distinct'

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


class _AllLost(Exception):
    """No candidate was left for the consumer ``index`` of the batch, after
    ``refused`` were tried: the transaction is rolled back and the claim
    searches again."""

    def __init__(self, index, refused):
        super().__init__(index, refused)
        self.index = index
        self.refused = refused


def claim(ctx, request, claims, trees=ANY):
    """Allocate the best candidates of ``request`` (a CandidateRequest) to
    the consumers of ``claims`` (consumers.ConsumerClaim, their
    allocations left empty), all or none; Claims. 409 when nothing fits
    (placement_lite.claim.nothing_fits, with explain's reasons) or when
    every candidate of each search was taken concurrently
    (placement.concurrent_update)."""
    if trees == DISTINCT and request.limit is not None and (
            request.limit < len(claims)):
        raise errors.BadRequest(
            'limit=%d is fewer than the %d consumers of a claim with '
            'trees=distinct.' % (request.limit, len(claims)),
            code=errors.QUERYPARAM_BAD_VALUE)
    # How many of the best candidates each search gives the claim.
    bound = request.limit or len(claims) + SPARE_CANDIDATES
    refused = 0
    for _search in range(SEARCHES):
        order = engine.claim_order(ctx.db, ctx.conf, request, bound)
        offers = _offers(order.found)
        _require_enough(ctx, request, bound, offers, len(claims), trees)
        try:
            claimed, refused_now = allocations.in_fresh_transactions(
                ctx.db, WORDING, lambda conn: _take(
                    conn, ctx.conf, claims, offers, order.start, trees))
        except _AllLost as all_lost:
            refused += all_lost.refused
            last = all_lost
            continue
        return Claims(claimed, refused + refused_now)
    if last.index:
        raise _nothing_fits(
            'The %d consumers do not fit together: no candidate among the '
            'best %d was left for consumer %d after the claims of those '
            'before it, in each of %d searches.'
            % (len(claims), bound, last.index + 1, SEARCHES))
    raise errors.Conflict(WORDING.concurrent.format(
        'the best %d candidates were taken by concurrent writers in each '
        'of %d searches' % (bound, SEARCHES)),
        code=errors.CONCURRENT_UPDATE)


def _offers(found):
    """An _Offer per candidate of ``found`` (engine.Candidates), in
    order."""
    uuids = found.uuids
    return [_Offer({uuids[p]: dict(resources)
                    for p, resources in candidate.allocations.items()},
                   {suffix: sorted(uuids[p] for p in providers)
                    for suffix, providers in candidate.mappings.items()},
                   candidate.anchor)
            for candidate in found.allocation_requests]


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


def _take(conn, conf, claims, offers, start, trees):
    """The body of a claim's transaction: ([Claimed], candidates refused).
    Raises _AllLost, or the last locks.Busy met (Database.write then
    waits for those rows and runs it again), when a consumer finds no
    candidate left."""
    owners = consumers.ensure_owners(conn, conf, claims)
    existing = consumers.lock_consumers(conn, claims)
    consumers.check_generations(claims, existing)
    states = consumers.record_consumers(conn, conf, claims, owners, existing)
    taken_trees = set()
    claimed = []
    refused = 0
    position = start
    for index, claim in enumerate(claims):
        busy = None
        for step in range(len(offers)):
            at = (position + step) % len(offers)
            offer = offers[at]
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
            if busy is not None:
                raise busy
            raise _AllLost(index, refused)
    return claimed, refused
