"""SQL for placement aggregates and providers' membership in them."""

import sqlalchemy as sa

from placement_lite.db import api as db_api
from placement_lite.db import lookups
from placement_lite.db import tables

aggregates = tables.placement_aggregates
links = tables.resource_provider_aggregates


def aggregate_uuids_of(conn, provider_id):
    """The uuids of the provider's aggregates, oldest aggregate first."""
    return list(conn.execute(
        sa.select(aggregates.c.uuid)
        .select_from(aggregates.join(links,
                                     aggregates.c.id == links.c.aggregate_id))
        .where(links.c.resource_provider_id == provider_id)
        .order_by(aggregates.c.id)).scalars())


def aggregate_ids(conn, uuids):
    """{uuid: id} for the aggregates among ``uuids`` that exist."""
    if not uuids:
        return {}
    return dict(conn.execute(
        sa.select(aggregates.c.uuid, aggregates.c.id)
        .where(aggregates.c.uuid.in_(sorted(set(uuids))))).all())


def ensure_aggregates(conn, uuids):
    """{uuid: id} for ``uuids``, creating the aggregates not seen before.

    Concurrent creators of the same aggregate do not fail: the insert
    ignores a uuid another transaction has just added.
    """
    missing = set(uuids) - set(aggregate_ids(conn, uuids))
    if missing:
        now = lookups.utcnow()
        conn.execute(
            db_api.insert_ignoring(conn, aggregates),
            [{'uuid': uuid, 'created_at': now} for uuid in sorted(missing)])
    return aggregate_ids(conn, uuids)


def set_provider_aggregates(conn, provider_id, wanted_ids):
    """Make the provider a member of exactly the aggregates ``wanted_ids``."""
    lookups.replace_provider_links(conn, links, links.c.aggregate_id,
                                   provider_id, wanted_ids)
