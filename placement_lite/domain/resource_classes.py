"""Resource classes: the standard ones (read-only) and custom ones.

Standard classes come from os-resource-classes with ids below
``FIRST_CUSTOM_RESOURCE_CLASS_ID``; custom classes (``CUSTOM_*``) are
numbered from there. Every other module resolves class names to ids through
:func:`ids_by_name`.
"""

from placement_lite import errors
from placement_lite.db import lookups
from placement_lite.db import resource_classes as db
from placement_lite.db import inventories as inventories_db
from placement_lite.domain import standard_names

#: Attempts at picking a fresh id when concurrent creators take ours.
_CREATE_ATTEMPTS = 100


class UnknownResourceClass(LookupError):
    """A resource class name that is not in the database."""

    def __init__(self, name):
        super().__init__('No such resource class %s.' % name)
        self.name = name


def ids_by_name(conn, names):
    """{name: id} for ``names``, in the caller's transaction.

    Raises :class:`UnknownResourceClass` for the first of ``names`` (in the
    order given) that does not exist; callers word the error for their route.
    """
    found = lookups.resource_class_ids(conn, names)
    for name in names:
        if name not in found:
            raise UnknownResourceClass(name)
    return found


def is_standard(row):
    return row.id < standard_names.FIRST_CUSTOM_RESOURCE_CLASS_ID


def list_resource_classes(database):
    with database.reader() as conn:
        return db.all_resource_classes(conn)


def get_resource_class(database, name):
    with database.reader() as conn:
        return _existing(conn, name)


def create_resource_class(database, name):
    """Create the custom class ``name``; 409 when it exists."""
    def work(conn):
        row = _create(conn, name)
        if row is None:
            raise errors.Conflict(
                'Conflicting resource class already exists: %s' % name)
        return row

    return database.write(work)


def ensure_resource_class(database, name):
    """Create the custom class ``name`` unless it exists: (row, created)."""
    def work(conn):
        row = db.resource_class_by_name(conn, name)
        if row is not None:
            return row, False
        row = _create(conn, name)
        if row is None:
            # A concurrent request created it between our read and insert.
            return db.resource_class_by_name(conn, name), False
        return row, True

    return database.write(work)


def rename_resource_class(database, name, new_name):
    """Rename the custom class ``name`` (before microversion 1.7)."""
    def work(conn):
        row = _existing(conn, name)
        if is_standard(row):
            raise errors.BadRequest(
                'Cannot update standard resource class %s' % name)
        renamed = db.try_rename_resource_class(conn, row.id, new_name)
        if renamed is None:
            raise errors.Conflict('Resource class already exists: %s'
                                  % new_name)
        return renamed

    return database.write(work)


def delete_resource_class(database, name):
    """Delete the custom class ``name`` unless some provider has inventory of it."""
    def work(conn):
        row = _existing(conn, name)
        if is_standard(row):
            raise errors.BadRequest(
                'Error in delete resource class: Cannot delete standard '
                'resource class %s.' % name)
        if inventories_db.class_has_inventory(conn, row.id):
            raise errors.Conflict(
                'Error in delete resource class: Cannot delete resource '
                'class %s. Class is in use in inventory.' % name)
        db.delete_resource_class(conn, row.id)

    return database.write(work)


def _existing(conn, name):
    row = db.resource_class_by_name(conn, name)
    if row is None:
        raise errors.ObjectNotFound(str(UnknownResourceClass(name)))
    return row


def _create(conn, name):
    """Insert a custom class with the next free id; None when the name is taken."""
    for _attempt in range(_CREATE_ATTEMPTS):
        class_id = db.next_custom_id(
            conn, standard_names.FIRST_CUSTOM_RESOURCE_CLASS_ID)
        row = db.try_insert_resource_class(conn, class_id, name)
        if row is not None:
            return row
        if db.resource_class_by_name(conn, name) is not None:
            return None
    raise errors.Conflict(
        'Max retries of DB transaction exceeded attempting to create '
        'resource class: %s, please try again.' % name)
