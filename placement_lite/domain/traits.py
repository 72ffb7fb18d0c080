"""Traits: standard ones from os-traits (read-only) and ``CUSTOM_*`` ones."""

from placement_lite import errors
from placement_lite.db import traits as db

CUSTOM_PREFIX = 'CUSTOM_'


def list_traits(database, names=None, prefix=None, associated=None):
    """Trait rows, narrowed as :func:`placement_lite.db.traits.filtered_traits` says."""
    with database.reader() as conn:
        return db.filtered_traits(conn, names=names, prefix=prefix,
                                  associated=associated)


def get_trait(database, name):
    with database.reader() as conn:
        return _existing(conn, name)


def ensure_trait(database, name):
    """Create the custom trait ``name`` unless it exists: (row, created)."""
    def work(conn):
        row = db.trait_by_name(conn, name)
        if row is not None:
            return row, False
        row = db.try_insert_trait(conn, name)
        if row is None:
            return db.trait_by_name(conn, name), False
        return row, True

    return database.write(work)


def delete_trait(database, name):
    """Delete a custom trait that no provider has."""
    def work(conn):
        row = _existing(conn, name)
        if not name.startswith(CUSTOM_PREFIX):
            raise errors.BadRequest('Cannot delete standard trait %s.' % name)
        if db.trait_in_use(conn, row.id):
            raise errors.Conflict(
                'The trait %s is in use by a resource provider.' % name)
        db.delete_trait(conn, row.id)

    return database.write(work)


def _existing(conn, name):
    row = db.trait_by_name(conn, name)
    if row is None:
        raise errors.NotFound('No such trait(s): %s.' % name)
    return row
