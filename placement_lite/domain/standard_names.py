"""The standard resource classes and traits, kept present in the database.

Standard resource classes (from os-resource-classes) get the fixed id of
their position in ``os_resource_classes.STANDARDS``; custom classes are
numbered from ``FIRST_CUSTOM_RESOURCE_CLASS_ID``. Standard traits come from
os-traits. Both sets are only ever added to, so a newer library adds names
at the next start.

Many processes, on many hosts, may start at once on one database: each
adds only what is missing, and a name another process adds at the same
moment is skipped, not an error (on a Galera cluster, where the other may
be on another node, the write conflicts at its commit and is tried again,
finding the name there).

Each name is added with its creation time, as the reference adds it: the
reference fails listing names without one (it compares the time it puts in
their place with the others'), and shows it as their last modification.
"""

import os_resource_classes
import os_traits
import sqlalchemy as sa

from placement_lite.db import api as db_api
from placement_lite.db import lookups
from placement_lite.db import tables

FIRST_CUSTOM_RESOURCE_CLASS_ID = 10000


def ensure_synced(db):
    db.write(_add_missing)


def _add_missing(conn):
    classes = _missing_resource_classes(conn)
    if classes:
        with db_api.zero_is_an_id(conn):
            db_api.insert_ignoring_duplicates(conn, tables.resource_classes,
                                              classes)
    traits = _missing_traits(conn)
    if traits:
        db_api.insert_ignoring_duplicates(conn, tables.traits, traits)


def missing(db):
    """(standard resource class names, standard trait names) the database
    lacks: what the next start of the service adds."""
    with db.reader() as conn:
        return ([row['name'] for row in _missing_resource_classes(conn)],
                [row['name'] for row in _missing_traits(conn)])


def _missing_resource_classes(conn):
    """Rows to insert for the standard classes the database lacks."""
    rc = tables.resource_classes
    present = set(conn.execute(sa.select(rc.c.name)).scalars())
    now = lookups.utcnow()
    return [{'id': index, 'name': name, 'created_at': now}
            for index, name in enumerate(os_resource_classes.STANDARDS)
            if name not in present]


def _missing_traits(conn):
    """Rows to insert for the standard traits the database lacks."""
    traits = tables.traits
    present = set(conn.execute(sa.select(traits.c.name)).scalars())
    now = lookups.utcnow()
    return [{'name': name, 'created_at': now}
            for name in os_traits.get_traits() if name not in present]
