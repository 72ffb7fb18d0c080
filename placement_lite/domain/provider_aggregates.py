"""The aggregates a resource provider is a member of."""

from placement_lite.db import aggregates as aggregates_db
from placement_lite.db import providers as providers_db
from placement_lite.domain import providers


def get_aggregates(db, uuid):
    """(provider generation, its aggregate uuids)."""
    with db.reader() as conn:
        return providers.found_or_404(
            aggregates_db.of_provider_named(conn, uuid), uuid)


def set_aggregates(db, uuid, aggregate_uuids, generation=None):
    """Make the provider a member of exactly ``aggregate_uuids``.

    Aggregates are created on first use. With ``generation`` (from 1.19)
    the provider's generation must still be that value and is bumped, even
    when the membership does not change; without it the generation is left
    alone, as the reference did before 1.19. Returns the provider's
    generation afterwards.
    """
    def work(conn):
        provider = providers.provider_or_404(conn, uuid)
        if generation is not None and provider.generation != generation:
            raise providers.generation_conflict()
        try:
            new_generation = aggregates_db.set_provider_aggregates(
                conn, provider.id, generation, aggregate_uuids)
        except providers_db.GenerationChanged:
            raise providers.generation_conflict()
        return provider.generation if generation is None else new_generation

    return db.write(work)
