"""Writing and reading allocations.

A write replaces all the allocations of the consumers it names, in one
transaction that:

1. locks the consumers and checks the generations clients expect (from
   1.28);
2. replaces the consumers' allocations with those asked for;
3. locks the providers they touch, so every writer of the same providers
   queues here instead of racing. Each of these two locks is taken all at
   once or not at all: when another transaction (of this service or of
   another on the same database) holds a row, the write is rolled back,
   waits for the row without holding any, and starts again (db.locks),
   so it cannot deadlock with a writer locking in another order. The
   allocations are written before the providers are locked: on MariaDB
   the reference deletes allocations at REPEATABLE READ, whose gap locks
   an insert may wait for, and waiting while holding a provider would
   close a cycle with the reference bumping it;
4. checks the amounts against the providers' inventories (capacity
   ``(total - reserved) * allocation_ratio``, ``min_unit``, ``max_unit``,
   ``step_size``) with every other allocation as it is now;
5. bumps the generations of the providers and consumers involved, and
   removes the consumers left without allocations.

If the database still reports a conflict (a provider generation changed
under us, a deadlock, a Galera certification conflict, a serialization
failure, two requests creating the same consumer) the whole write,
projects, users and consumer types included, is retried in a NEW
transaction (``Database.write``), up to ``[placement]
allocation_conflict_retry_count`` times, then answered 409.
"""

import collections
import dataclasses
import logging

from placement_lite import errors
from placement_lite import observe
from placement_lite.db import allocations as allocations_db
from placement_lite.db import api as db_api
from placement_lite.db import consumers as consumers_db
from placement_lite.db import lookups
from placement_lite.db import providers as providers_db
from placement_lite.db import tables
from placement_lite.domain import consumers
from placement_lite.domain import providers

LOG = logging.getLogger(__name__)

CONSUMER_CHANGED = ('Another thread concurrently updated the data. '
                    'Please retry your update')
PROVIDER_CHANGED = ('Another thread concurrently updated the resource '
                    'provider data. Please retry your update')

@dataclasses.dataclass(frozen=True)
class Wording:
    """How a route words two of its errors (each has its own prefix)."""

    #: 400 for an unknown resource class, ``{}`` is "No such resource class X."
    unknown_class: str
    #: 409 ``placement.concurrent_update`` after a concurrent change.
    concurrent: str


PUT_WORDING = 'Unable to allocate inventory for consumer %s: {}'
POST_WORDING = Wording(
    unknown_class='Unable to allocate inventory {}',
    concurrent='Inventory and/or allocations changed while attempting to '
               'allocate: {}')


def put_wording(consumer_uuid):
    return dataclasses.replace(
        POST_WORDING, unknown_class=PUT_WORDING % consumer_uuid)


class ProviderGenerationChanged(db_api.Retry):
    """A provider generation moved during the write: retry afresh."""


@dataclasses.dataclass(slots=True)
class _Claim:
    """One (consumer, provider, class, amount); amount 0 removes."""

    consumer_uuid: str
    provider: object
    resource_class: str
    used: int


def in_fresh_transactions(db, wording, work):
    """``db.write(work)``: ``work(conn)`` in a writer transaction, again in
    a new one when it meets a concurrent write; 409 when the retries run
    out."""
    try:
        return db.write(work,
                        on_retry=observe.watcher.allocation_write_retried)
    except db_api.StillConflicting:
        raise errors.Conflict(wording.concurrent.format(PROVIDER_CHANGED),
                              code=errors.CONCURRENT_UPDATE)


def set_allocations(ctx, claims, wording):
    """Replace the allocations of the consumers in ``claims`` (a list of
    :class:`consumers.ConsumerClaim`), atomically."""
    def work(conn):
        owners = consumers.ensure_owners(conn, ctx.conf, claims)
        existing = consumers.lock_consumers(conn, claims)
        consumers.check_generations(claims, existing)
        require_providers(claims, providers_touched(conn, claims))
        states = consumers.record_consumers(
            conn, ctx.conf, claims, owners, existing)
        replace_allocations(conn, claims, states, wording)

    in_fresh_transactions(ctx.db, wording, work)


def _current_of_emptied(conn, requests):
    emptied = [request.uuid for request in requests if not request.allocations]
    return allocations_db.of_consumers(conn, emptied)


def providers_touched(conn, requests, also=(), lock=False):
    """{uuid: row} of every provider the write touches that exists: those
    named, those holding the current allocations of consumers being
    emptied, and ``also``; with ``lock``, locked in one statement
    (db.locks)."""
    named = [uuid for request in requests for uuid in request.allocations]
    holding = [row.provider_uuid
               for row in _current_of_emptied(conn, requests)]
    return allocations_db.providers_named(conn, [*named, *holding, *also],
                                          lock)


def require_providers(requests, found):
    """400 for the first provider the requests name that does not exist."""
    for request in requests:
        for uuid in request.allocations:
            if uuid not in found:
                raise errors.BadRequest(
                    "Allocation for resource provider '%s' that does not "
                    "exist." % uuid)


def _claims(conn, requests, providers):
    """The claims of a write: the requested amounts, plus a 0 for each
    current allocation of a consumer whose allocations are emptied (those
    providers count as touched: their generation moves)."""
    result = []
    current = _current_of_emptied(conn, requests)
    for request in requests:
        if request.allocations:
            for provider_uuid, resources in request.allocations.items():
                provider = providers.get(provider_uuid)
                if provider is None:
                    # Deleted since the caller found it: the write starts
                    # again, and finds it missing.
                    raise ProviderGenerationChanged([provider_uuid])
                for resource_class, amount in resources.items():
                    result.append(_Claim(request.uuid, provider,
                                         resource_class, amount))
        else:
            result.extend(
                _Claim(request.uuid, providers[row.provider_uuid],
                       row.resource_class, 0)
                for row in current if row.consumer_uuid == request.uuid)
    return result


def replace_allocations(conn, requests, states, wording):
    """The body of an allocation write, inside the caller's transaction,
    after :func:`require_providers` (the reshaper calls it between its two
    inventory steps, which move provider generations: they are read again
    here, under the lock)."""
    claims = _claims(conn, requests, providers_touched(conn, requests))
    if not claims:
        return
    class_ids = lookups.resource_class_ids(
        conn, [claim.resource_class for claim in claims])
    for claim in claims:
        if claim.resource_class not in class_ids:
            raise errors.BadRequest(wording.unknown_class.format(
                'No such resource class %s.' % claim.resource_class))

    provider_ids = sorted({claim.provider.id for claim in claims})
    wanted_class_ids = sorted({class_ids[c.resource_class] for c in claims})
    before = allocations_db.usage_by_provider_and_class(
        conn, provider_ids, wanted_class_ids)
    consumer_uuids = {claim.consumer_uuid for claim in claims}
    allocations_db.delete_for_consumers(conn, consumer_uuids)
    allocations_db.insert(conn, [
        {'provider_id': claim.provider.id,
         'class_id': class_ids[claim.resource_class],
         'consumer_uuid': claim.consumer_uuid, 'used': claim.used}
        for claim in claims if claim.used > 0])

    locked = allocations_db.providers_named(
        conn, [claim.provider.uuid for claim in claims], lock=True)
    touched = {}
    for claim in claims:
        claim.provider = locked.get(claim.provider.uuid)
        if claim.provider is None:
            # Deleted since it was read: the write starts again, and finds
            # it missing.
            raise ProviderGenerationChanged(provider_ids)
        touched[claim.provider.id] = claim.provider
    _check_capacity(conn, claims, class_ids, touched, before)

    if not providers_db.bump_generations(conn, {
            provider_id: provider.generation
            for provider_id, provider in touched.items()}):
        raise ProviderGenerationChanged(provider_ids)
    if not consumers_db.bump_consumer_generations(conn, {
            states[uuid].id: states[uuid].generation
            for uuid in consumer_uuids}):
        raise errors.Conflict(wording.concurrent.format(CONSUMER_CHANGED),
                              code=errors.CONCURRENT_UPDATE)
    holding = {claim.consumer_uuid for claim in claims if claim.used > 0}
    consumers_db.delete_consumers_without_allocations(
        conn, consumer_uuids - holding)


class CapacityExceeded(errors.Conflict):
    """A claim does not fit its provider's inventory now (409): a claim
    of the best candidate (domain.claims) tries the next one."""


def _invalid(detail):
    return CapacityExceeded('Unable to allocate inventory: %s' % detail)


def _check_capacity(conn, claims, class_ids, touched, before):
    """Raise 409 unless every claim fits its provider's inventory, the
    claims written already.

    ``before`` is the usage before the consumers' allocations were removed:
    a provider already over capacity (an inventory shrunk under existing
    allocations) may take a change that does not make things worse.
    """
    provider_ids = sorted(touched)
    wanted_class_ids = sorted(set(class_ids[c.resource_class] for c in claims))
    inventory = allocations_db.inventories_in_use(
        conn, provider_ids, wanted_class_ids)
    usage = collections.Counter(
        {key: int(record.in_use) for key, record in inventory.items()})
    # Every other consumer's: the claims are counted one by one below.
    for claim in claims:
        usage[claim.provider.id, class_ids[claim.resource_class]] -= (
            claim.used)

    with_inventory = {provider_id for provider_id, _ in inventory}
    without = [touched[p].uuid for p in provider_ids if p not in with_inventory]
    if without:
        names = lookups.resource_class_names(conn, wanted_class_ids)
        raise _invalid("Inventory for '%s' on resource provider '%s' invalid."
                       % (', '.join(names[i] for i in wanted_class_ids),
                          ', '.join(sorted(without))))

    requested = collections.Counter()
    for claim in claims:
        provider_uuid = claim.provider.uuid
        key = (claim.provider.id, class_ids[claim.resource_class])
        requested[key] += claim.used
        if claim.used == 0:
            continue
        record = inventory.get(key)
        if record is None:
            raise _invalid(
                "Inventory for '%s' on resource provider '%s' invalid."
                % (claim.resource_class, provider_uuid))
        if (claim.used < record.min_unit or claim.used > record.max_unit
                or claim.used % record.step_size != 0):
            raise _invalid(
                "Unable to create allocation for '%s' on resource provider "
                "'%s'. The requested amount would violate inventory "
                "constraints." % (claim.resource_class, provider_uuid))
        used = usage.get(key, 0)
        capacity = tables.capacity_of(record.total, record.reserved,
                                      record.allocation_ratio)
        if capacity < used + claim.used or capacity < used + requested[key]:
            previous = before.get(key)
            if previous is not None and used + requested[key] <= previous:
                LOG.warning('Over capacity for %s on resource provider %s, '
                            'but the change reduces the overage from %s to '
                            '%s', claim.resource_class, provider_uuid,
                            previous, used + requested[key])
                continue
            raise _invalid(
                "Unable to create allocation for '%s' on resource provider "
                "'%s'. The requested amount would exceed the capacity."
                % (claim.resource_class, provider_uuid))


@dataclasses.dataclass
class ConsumerAllocations:
    consumer: object  # consumer row, or None when it has no allocations
    allocations: list


def allocations_of_consumer(ctx, consumer_uuid):
    with ctx.db.reader() as conn:
        rows = allocations_db.of_consumers(conn, [consumer_uuid])
        found = consumers_db.consumers_by_uuid(conn, [consumer_uuid])
    consumer = found.get(consumer_uuid)
    if consumer is None:
        rows = []
    return ConsumerAllocations(consumer if rows else None, rows)


def allocations_on_provider(ctx, provider_uuid):
    """(provider generation, allocation rows); 404 for an unknown
    provider."""
    with ctx.db.reader() as conn:
        return providers.found_or_404(
            allocations_db.on_provider_named(conn, provider_uuid),
            provider_uuid, "Resource provider '%s' not found: No resource "
            "provider with uuid %s found" % (provider_uuid, provider_uuid))


def delete_allocations(ctx, consumer_uuid):
    """Remove all of a consumer's allocations and the consumer; 404 when it
    has none. Provider generations do not move (as in the reference)."""
    def work(conn):
        consumers_db.consumers_by_uuid(conn, [consumer_uuid], lock=True)
        if not allocations_db.of_consumers(conn, [consumer_uuid]):
            raise errors.NotFound("No allocations for consumer '%s'"
                                  % consumer_uuid)
        allocations_db.delete_for_consumers(conn, [consumer_uuid])
        consumers_db.delete_consumers_without_allocations(
            conn, [consumer_uuid])

    in_fresh_transactions(ctx.db, POST_WORDING, work)
