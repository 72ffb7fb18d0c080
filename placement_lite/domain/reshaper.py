"""The reshaper: replace the inventories and allocations of a set of
providers (typically one tree, when inventory moves from a root to new
children) in one transaction.

The order of the checks and their errors are the reference's: providers in
``inventories`` (400 unknown, 409 stale generation), consumer generations,
providers in ``allocations``, then inside the write: unknown resource
classes (400), allocations that do not fit (409), inventory left in use
(409 ``placement.inventory.inuse``).

Inventories change in two steps, because allocations cannot be written
against inventory that does not exist yet, and inventory cannot be removed
while allocated: first each provider gets the union of its current and new
inventories, then the allocations are replaced, then each provider gets
exactly its new inventories.
"""

import dataclasses

from placement_lite import errors
from placement_lite.domain import allocations
from placement_lite.domain import consumers
from placement_lite.domain import inventories as inventories_domain
from placement_lite.domain import resource_classes
from placement_lite.db import inventories as inventories_db

WORDING = allocations.Wording(unknown_class='malformed reshaper data: {}',
                              concurrent='update conflict: {}')


@dataclasses.dataclass
class ProviderInventories:
    """The inventories a provider should end with, and the generation the
    client last saw."""

    generation: int
    inventories: list


@dataclasses.dataclass
class _Provider:
    id: int
    uuid: str
    generation: int


def _check_inventory_providers(wanted, locked):
    for uuid, target in wanted.items():
        row = locked.get(uuid)
        if row is None:
            raise errors.BadRequest(
                'Resource provider %s in inventories not found: No resource '
                'provider with uuid %s found' % (uuid, uuid),
                code=errors.RESOURCE_PROVIDER_NOT_FOUND)
        if row.generation != target.generation:
            raise errors.Conflict(
                'resource provider generation conflict for provider %s: '
                'actual: %s, given: %s' % (uuid, row.generation,
                                           target.generation),
                code=errors.CONCURRENT_UPDATE)


def _set_inventories(conn, wanted, interim):
    """One of the two inventory steps, for every provider at once (as if
    one by one, in request order)."""
    locked = allocations.providers_touched(conn, [], also=list(wanted),
                                           lock=True)
    targets = [(_Provider(locked[uuid].id, uuid, locked[uuid].generation),
                target.inventories) for uuid, target in wanted.items()
               if target.inventories or not interim]
    if interim:
        current = inventories_db.inventories_of_providers(
            conn, [provider.id for provider, _ in targets])
        targets = [(provider, list({
            inventory.resource_class: inventory for inventory in [
                *map(inventories_domain.Inventory.from_row,
                     current.get(provider.id, [])), *new]}.values()))
            for provider, new in targets]
    try:
        inventories_domain.set_inventories(conn, targets)
    except resource_classes.UnknownResourceClass as exc:
        raise errors.BadRequest(WORDING.unknown_class.format(exc))
    except inventories_domain.InventoryInUse as exc:
        raise errors.Conflict(WORDING.concurrent.format(exc),
                              code=errors.INVENTORY_INUSE)
    except inventories_domain.ConcurrentUpdate:
        raise allocations.ProviderGenerationChanged(list(wanted))


def reshape(ctx, wanted, claims):
    """Apply ``wanted`` ({provider uuid: ProviderInventories}, request
    order) and ``claims`` (ConsumerClaims) atomically."""
    def work(conn):
        owners = consumers.ensure_owners(conn, ctx.conf, claims)
        existing = consumers.lock_consumers(conn, claims)
        locked = allocations.providers_touched(
            conn, claims, also=list(wanted), lock=True)
        _check_inventory_providers(wanted, locked)
        consumers.check_generations(claims, existing)
        allocations.require_providers(claims, locked)
        states = consumers.record_consumers(conn, ctx.conf, claims, owners,
                                            existing)
        _set_inventories(conn, wanted, interim=True)
        allocations.replace_allocations(conn, claims, states, WORDING)
        _set_inventories(conn, wanted, interim=False)

    allocations.in_fresh_transactions(ctx.db, WORDING, work)
