"""The generation guard (tests/generation_guard.py) catches a write of a
provider's stock that does not bump its generation, and lets one that does
through."""

import pytest
import sqlalchemy as sa

from placement_lite.db import inventories as inventories_db
from placement_lite.db import provider_traits as provider_traits_db
from placement_lite.db import tables
from tests import generation_guard
from tests import seed

RP = '0d000000-0000-4000-8000-000000000001'
VCPU = 0


@pytest.fixture
def provider_id(environment):
    return seed.add_provider(environment.db, RP,
                             inventories={'VCPU': {'total': 8}})


def _caught_during(work):
    """The guard's message for ``work``, taken off the list the
    autouse fixture checks."""
    seen = len(generation_guard.caught)
    with pytest.raises(generation_guard.UnbumpedWrite):
        work()
    caught = generation_guard.caught[seen:]
    del generation_guard.caught[seen:]
    assert len(caught) == 1
    return caught[0]


def test_inventory_update_without_bump_is_caught(environment, provider_id):
    inv = tables.inventories

    def work():
        with environment.db.writer() as conn:
            conn.execute(inv.update()
                         .where(inv.c.resource_provider_id == provider_id)
                         .values(total=4))

    message = _caught_during(work)
    assert 'inventories' in message and str(provider_id) in message
    with environment.db.reader() as conn:
        assert conn.execute(sa.select(inv.c.total)).scalar() == 8


def test_trait_link_without_bump_is_caught(environment, provider_id):
    def work():
        with environment.db.writer() as conn:
            trait_id = conn.execute(sa.select(tables.traits.c.id)
                                    .limit(1)).scalar()
            conn.execute(tables.resource_provider_traits.insert().values(
                resource_provider_id=provider_id, trait_id=trait_id))

    assert 'resource_provider_traits' in _caught_during(work)


def test_the_db_write_functions_pass(environment, provider_id):
    with environment.db.writer() as conn:
        generation = inventories_db.update_inventory(
            conn, provider_id, 0, VCPU,
            dict(seed.INVENTORY_DEFAULTS, total=4))
        trait_id = conn.execute(sa.select(tables.traits.c.id)
                                .limit(1)).scalar()
        generation = provider_traits_db.set_provider_traits(
            conn, provider_id, generation, [trait_id])
    assert generation == 2


def test_aggregate_membership_is_not_guarded(environment, provider_id):
    """Before 1.19 membership changes without a bump, as in the
    reference (see tests/generation_guard.py)."""
    status, _headers, _body = environment.request(
        'PUT', '/resource_providers/%s/aggregates' % RP,
        ['0d000000-0000-4000-8000-0000000000a1'], version='1.18')
    assert status == 200
    with environment.db.reader() as conn:
        assert conn.execute(sa.select(tables.resource_providers.c.generation)
                            ).scalar() == 0


def test_every_table_says_how_caches_see_its_writes():
    """A table added to the schema must say what a process compares to see
    a write of it (SEEN_BY), before any test writes it."""
    assert set(generation_guard.SEEN_BY) == set(tables.metadata.tables) - {
        tables.VERSION_TABLE}
    assert generation_guard.STOCK_TABLES <= set(generation_guard.SEEN_BY)
