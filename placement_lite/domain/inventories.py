"""Provider inventories: read, add, update, replace and delete them.

Every change goes through one write function of ``db.inventories``, which
checks and bumps the provider's generation in the same transaction before
it reads or writes inventory rows (see there). A refusal found after the
bump rolls it back with everything else.

:func:`set_provider_inventories` is the replacement step on its own, for
callers (the reshaper) that change several providers in one transaction of
theirs.
"""

import contextlib
import dataclasses
import datetime
import itertools
import logging

from placement_lite import errors
from placement_lite.db import inventories as db
from placement_lite.db import lookups
from placement_lite.db import providers as providers_db
from placement_lite.db import tables
from placement_lite.domain import providers
from placement_lite.domain import resource_classes
from placement_lite.schemas import common

LOG = logging.getLogger(__name__)


@dataclasses.dataclass(slots=True)
class Inventory:
    """One resource class's inventory; the defaults are the API's."""

    resource_class: str
    total: int
    reserved: int = 0
    min_unit: int = 1
    max_unit: int = common.MAX_INT
    step_size: int = 1
    allocation_ratio: float = 1.0
    #: When the stored row last changed; None for one not read from the database.
    last_modified: datetime.datetime | None = None

    @classmethod
    def from_row(cls, row):
        return cls(row.resource_class, row.total, row.reserved, row.min_unit,
                   row.max_unit, row.step_size, row.allocation_ratio,
                   row.updated_at or row.created_at)

    @property
    def capacity(self):
        """What can be allocated (db.tables.capacity_of); check_capacity
        refuses any negative capacity."""
        return tables.capacity_of(self.total, self.reserved,
                                  self.allocation_ratio)

    def values(self):
        """The six stored fields (db.INVENTORY_FIELDS)."""
        return {'total': self.total, 'reserved': self.reserved,
                'min_unit': self.min_unit, 'max_unit': self.max_unit,
                'step_size': self.step_size,
                'allocation_ratio': self.allocation_ratio}


class InventoryInUse(Exception):
    """Deleting inventory that allocations still consume."""

    def __init__(self, class_names, provider_uuid):
        super().__init__("Inventory for '%s' on resource provider '%s' in use."
                         % (', '.join(class_names), provider_uuid))


class ConcurrentUpdate(Exception):
    """The provider's generation moved under us."""

    def __init__(self):
        super().__init__('Another thread concurrently updated the resource '
                         'provider data. Please retry your update')


class InvalidCapacity(ValueError):
    """An inventory whose reserved amount leaves no usable capacity."""


def check_capacity(inventories, provider_uuid, reserved_may_equal_total):
    """Refuse inventories with negative capacity (or zero capacity, unless
    ``reserved_may_equal_total``, as from microversion 1.26)."""
    for inventory in inventories:
        capacity = inventory.capacity
        if capacity < 0 or (capacity == 0 and not reserved_may_equal_total):
            raise InvalidCapacity(
                "Invalid inventory for '%s' on resource provider '%s'. The "
                "reserved value is greater than %s."
                % (inventory.resource_class, provider_uuid,
                   'total' if reserved_may_equal_total
                   else 'or equal to total'))


def set_provider_inventories(conn, provider, inventories):
    """Make ``inventories`` the provider's whole inventory; returns the new
    generation. See set_inventories."""
    return set_inventories(conn, [(provider, inventories)])[0]


def set_inventories(conn, targets):
    """Make the inventories of providers those given, in one go; returns
    their new generations.

    Runs in the caller's transaction. ``targets`` are (provider,
    [Inventory]) pairs, each provider a row with ``id``, ``uuid`` and the
    ``generation`` the caller expects. Raises, as setting them one by one
    in that order would for the first that has one,
    :class:`resource_classes.UnknownResourceClass`, :class:`InventoryInUse`
    (a class to drop still has allocations) or :class:`ConcurrentUpdate`;
    the caller's transaction must then roll back.
    """
    ids = lookups.resource_class_ids(conn, [
        inventory.resource_class for _provider, inventories in targets
        for inventory in inventories])
    known = list(itertools.takewhile(
        lambda target: all(inventory.resource_class in ids
                           for inventory in target[1]), targets))
    wanted = [(provider, {ids[inventory.resource_class]: inventory
                          for inventory in inventories})
              for provider, inventories in known]
    try:
        db.replace_inventories(
            conn, {provider.id: provider.generation for provider, _ in known},
            {provider.id: {class_id: inventory.values()
                           for class_id, inventory in by_class.items()}
             for provider, by_class in wanted})
    except providers_db.GenerationChanged:
        raise ConcurrentUpdate()
    except db.InventoryInUse as exc:
        raise _in_use(conn, next(provider for provider, _ in known
                                 if provider.id == exc.provider_id), exc)
    if len(known) < len(targets):
        raise resource_classes.UnknownResourceClass(next(
            inventory.resource_class for inventory in targets[len(known)][1]
            if inventory.resource_class not in ids))
    _warn_over_capacity(conn, wanted)
    return [provider.generation + 1 for provider, _ in targets]


def get_inventories(database, uuid):
    """(provider generation, [Inventory]) of the provider ``uuid``."""
    with database.reader() as conn:
        generation, rows = providers.found_or_404(
            db.of_provider_named(conn, uuid), uuid, _not_found_on_read(uuid))
    return generation, [Inventory.from_row(row) for row in rows]


def get_inventory(database, uuid, resource_class):
    """(provider generation, Inventory) of one class of the provider ``uuid``."""
    with database.reader() as conn:
        provider = _provider_for_read(conn, uuid)
        row = db.inventory_of_provider(conn, provider.id, resource_class)
        if row is None:
            raise errors.NotFound('No inventory of class %s for %s'
                                  % (resource_class, uuid))
        return provider.generation, Inventory.from_row(row)


def add_inventory(database, uuid, inventory, reserved_may_equal_total):
    """Add inventory of a class the provider has none of; returns the new generation."""
    def work(conn):
        provider = providers.provider_or_404(conn, uuid)
        try:
            check_capacity([inventory], uuid, reserved_may_equal_total)
            class_id = _class_ids(conn, [inventory])[0]
        except (InvalidCapacity, resource_classes.UnknownResourceClass) as exc:
            raise errors.BadRequest(
                'Unable to create inventory for resource provider %s: %s'
                % (uuid, exc))
        with _concurrent_update_as_conflict('Update conflict: %s'):
            new_generation = db.add_inventory(
                conn, provider.id, provider.generation, class_id,
                inventory.values())
        if new_generation is None:
            raise errors.Conflict(
                'Update conflict: the resource provider %s already has '
                'inventory of class %s' % (uuid, inventory.resource_class),
                code=errors.CONCURRENT_UPDATE)
        return new_generation

    return database.write(work)


def update_inventory(database, uuid, generation, inventory,
                     reserved_may_equal_total):
    """Overwrite the provider's inventory of one class; returns the new generation."""
    def work(conn):
        provider = _provider_to_update(conn, uuid, generation, [inventory],
                                       reserved_may_equal_total)
        try:
            class_id = _class_ids(conn, [inventory])[0]
        except resource_classes.UnknownResourceClass as exc:
            raise errors.ObjectNotFound(str(exc))
        with _concurrent_update_as_conflict('update conflict: %s'):
            new_generation = db.update_inventory(
                conn, provider.id, provider.generation, class_id,
                inventory.values())
        if new_generation is None:
            raise errors.BadRequest(
                'No inventory record with resource class for resource '
                'provider %s: No inventory of class %s found.'
                % (uuid, inventory.resource_class))
        _warn_over_capacity(conn, [(provider, {class_id: inventory})])
        return new_generation

    return database.write(work)


def replace_inventories(database, uuid, generation, inventories,
                        reserved_may_equal_total):
    """Make ``inventories`` the provider's whole inventory; returns the new generation."""
    def work(conn):
        provider = _provider_to_update(conn, uuid, generation, inventories,
                                       reserved_may_equal_total)
        try:
            return set_provider_inventories(conn, provider, inventories)
        except resource_classes.UnknownResourceClass as exc:
            raise errors.BadRequest(
                'Unknown resource class in inventory for resource provider '
                '%s: %s' % (uuid, exc))
        except InventoryInUse as exc:
            raise errors.Conflict('update conflict: %s' % exc,
                                  code=errors.INVENTORY_INUSE)
        except ConcurrentUpdate as exc:
            raise errors.Conflict('update conflict: %s' % exc,
                                  code=errors.CONCURRENT_UPDATE)

    return database.write(work)


def delete_inventory(database, uuid, resource_class):
    """Delete the provider's inventory of one class, unless it is allocated."""
    def work(conn):
        provider = providers.provider_or_404(conn, uuid)
        not_found = 'No inventory of class %s found for delete' % resource_class
        try:
            class_id = resource_classes.ids_by_name(
                conn, [resource_class])[resource_class]
        except resource_classes.UnknownResourceClass as exc:
            raise errors.NotFound('%s: %s' % (not_found, exc))
        conflict = 'Unable to delete inventory of class %s: %%s' % (
            resource_class)
        try:
            with _concurrent_update_as_conflict(conflict):
                deleted = db.delete_inventory(
                    conn, provider.id, provider.generation, class_id)
        except db.InventoryInUse as exc:
            # The reference labels this conflict a concurrent update.
            raise errors.Conflict(conflict % _in_use(conn, provider, exc),
                                  code=errors.CONCURRENT_UPDATE)
        if deleted is None:
            raise errors.NotFound('%s: %s' % (not_found, not_found))

    return database.write(work)


def delete_all_inventories(database, uuid):
    """Delete all the provider's inventory, unless some of it is allocated."""
    def work(conn):
        provider = providers.provider_or_404(conn, uuid)
        try:
            set_provider_inventories(conn, provider, [])
        except InventoryInUse as exc:
            raise errors.Conflict(str(exc), code=errors.INVENTORY_INUSE)
        except ConcurrentUpdate:
            raise errors.Conflict(
                'Unable to delete inventory for resource provider %s because '
                'the inventory was updated by another process. Please retry '
                'your request.' % uuid, code=errors.CONCURRENT_UPDATE)

    return database.write(work)


def _provider_for_read(conn, uuid):
    return providers.provider_or_404(conn, uuid, _not_found_on_read(uuid))


def _not_found_on_read(uuid):
    # The reference repeats its lookup message on these reads.
    message = 'No resource provider with uuid %s found' % uuid
    return '%s : %s' % (message, message)


def _provider_to_update(conn, uuid, generation, inventories,
                        reserved_may_equal_total):
    """The provider ``uuid``, once it is found at ``generation`` and
    ``inventories`` have a usable capacity (404, 409, 400 otherwise)."""
    provider = providers.provider_or_404(conn, uuid)
    if provider.generation != generation:
        raise errors.Conflict('resource provider generation conflict',
                              code=errors.CONCURRENT_UPDATE)
    try:
        check_capacity(inventories, uuid, reserved_may_equal_total)
    except InvalidCapacity as exc:
        raise errors.BadRequest(
            'Unable to update inventory for resource provider %s: %s'
            % (uuid, exc))
    return provider


def _class_ids(conn, inventories):
    """The resource class ids of ``inventories``, in order."""
    names = [inventory.resource_class for inventory in inventories]
    ids = resource_classes.ids_by_name(conn, names)
    return [ids[name] for name in names]


def _in_use(conn, provider, exc):
    """InventoryInUse naming the classes of ``exc`` (a db.InventoryInUse)."""
    names = lookups.resource_class_names(conn, exc.class_ids)
    return InventoryInUse([names[class_id] for class_id in exc.class_ids],
                          provider.uuid)


def _warn_over_capacity(conn, wanted):
    """Log the classes whose new inventory is below what is allocated:
    allowed, as in the reference, but the provider is then over capacity.
    ``wanted``: (provider, {class id: Inventory}) pairs. One line per
    provider names them all (the reference writes one per class: 42,000
    lines for the largest body)."""
    used = db.used_amounts(
        conn, [provider.id for provider, _ in wanted],
        {class_id for _, by_class in wanted for class_id in by_class})
    for provider, by_class in wanted:
        over = [inventory.resource_class
                for class_id, inventory in by_class.items()
                if used.get((provider.id, class_id), 0) > inventory.capacity]
        if over:
            LOG.warning('Resource provider %s is now over-capacity for %s',
                        provider.uuid, ', '.join(over))


@contextlib.contextmanager
def _concurrent_update_as_conflict(message_format):
    """A moved generation as a 409 worded ``message_format``."""
    try:
        yield
    except providers_db.GenerationChanged:
        raise errors.Conflict(message_format % ConcurrentUpdate(),
                              code=errors.CONCURRENT_UPDATE)
