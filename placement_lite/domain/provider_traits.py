"""The traits a resource provider has."""

from placement_lite import errors
from placement_lite.db import providers as providers_db
from placement_lite.db import provider_traits as traits_db
from placement_lite.domain import providers

_CONCURRENT = ('Another thread concurrently updated the resource provider '
               'data. Please retry your update')


def get_traits(db, uuid):
    """(provider generation, its trait rows, oldest first)."""
    with db.reader() as conn:
        return providers.found_or_404(
            traits_db.of_provider_named(conn, uuid), uuid,
            'No resource provider with uuid %s found: No resource provider '
            'with uuid %s found' % (uuid, uuid))


def _replace_traits(conn, provider, trait_ids):
    """Set the provider's traits (bumping its generation if they change);
    its generation afterwards."""
    try:
        return traits_db.set_provider_traits(conn, provider.id,
                                             provider.generation, trait_ids)
    except providers_db.GenerationChanged:
        raise errors.Conflict(_CONCURRENT, code=errors.CONCURRENT_UPDATE)


def set_traits(db, uuid, names, generation):
    """Give the provider exactly the traits ``names``.

    The provider's generation must still be ``generation``; it is bumped
    only when the set of traits changes. Returns (trait rows, generation).
    """
    def work(conn):
        provider = providers.provider_or_404(conn, uuid)
        if provider.generation != generation:
            raise providers.generation_conflict()
        traits = traits_db.traits_named(conn, names)
        unknown = set(names) - {trait.name for trait in traits}
        if unknown:
            raise errors.BadRequest('No such trait %s' % ', '.join(
                sorted(unknown)))
        return traits, _replace_traits(
            conn, provider, [trait.id for trait in traits])

    return db.write(work)


def clear_traits(db, uuid):
    """Remove every trait of the provider (no generation asked)."""
    def work(conn):
        provider = providers.provider_or_404(conn, uuid)
        _replace_traits(conn, provider, [])

    return db.write(work)
