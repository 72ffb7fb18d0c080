"""Rows written straight into a test database: providers with inventories.

For pytest tests of allocations that should not depend on the provider and
inventory routes.
"""

from placement_lite.db import lookups
from placement_lite.db import tables

INVENTORY_DEFAULTS = {'reserved': 0, 'min_unit': 1, 'max_unit': 2147483647,
                      'step_size': 1, 'allocation_ratio': 1.0}


def add_provider(db, uuid, name=None, inventories=None):
    """Create a root provider at generation 0 with ``inventories``
    ({class: {'total': n, ...}}); returns its id."""
    rp = tables.resource_providers
    with db.writer() as conn:
        provider_id = conn.execute(rp.insert().values(
            uuid=uuid, name=name or uuid, generation=0,
            created_at=lookups.utcnow())).inserted_primary_key[0]
        conn.execute(rp.update().where(rp.c.id == provider_id)
                     .values(root_provider_id=provider_id))
        class_ids = lookups.resource_class_ids(conn, list(inventories or {}))
        rows = []
        for name_, fields in (inventories or {}).items():
            row = dict(INVENTORY_DEFAULTS, **fields)
            row.update(resource_provider_id=provider_id,
                       resource_class_id=class_ids[name_])
            rows.append(row)
        if rows:
            conn.execute(tables.inventories.insert(), rows)
    return provider_id


def set_inventory_total(db, provider_uuid, resource_class, total):
    """Change an inventory's total behind the API's back (bumping the
    provider's generation, as every inventory write must)."""
    inv = tables.inventories
    rp = tables.resource_providers
    with db.writer() as conn:
        provider_id = lookups.provider_by_uuid(conn, provider_uuid).id
        class_id = lookups.resource_class_ids(conn, [resource_class])[
            resource_class]
        conn.execute(inv.update().where(inv.c.resource_provider_id == provider_id,
                                        inv.c.resource_class_id == class_id)
                     .values(total=total))
        conn.execute(rp.update().where(rp.c.id == provider_id)
                     .values(generation=rp.c.generation + 1))
