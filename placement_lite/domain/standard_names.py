"""The standard resource classes and traits, kept present in the database.

Standard resource classes (from os-resource-classes) get the fixed id of
their position in ``os_resource_classes.STANDARDS``; custom classes are
numbered from ``FIRST_CUSTOM_RESOURCE_CLASS_ID``. Standard traits come from
os-traits. Both sets are only ever added to, so a newer library adds names
at the next start.

Many processes, on many hosts, may start at once on one database: each
adds only what is missing, and a name another process adds at the same
moment is skipped, not an error.
"""

import os_resource_classes
import os_traits
import sqlalchemy as sa

from placement_lite.db import api as db_api
from placement_lite.db import tables

FIRST_CUSTOM_RESOURCE_CLASS_ID = 10000


def ensure_synced(db):
    with db.writer() as conn:
        _insert_missing_resource_classes(conn)
        _insert_missing_traits(conn)


def _insert_missing_resource_classes(conn):
    rc = tables.resource_classes
    present = set(conn.execute(sa.select(rc.c.name)).scalars())
    missing = [{'id': index, 'name': name}
               for index, name in enumerate(os_resource_classes.STANDARDS)
               if name not in present]
    if missing:
        db_api.insert_ignoring_duplicates(conn, rc, missing)


def _insert_missing_traits(conn):
    traits = tables.traits
    present = set(conn.execute(sa.select(traits.c.name)).scalars())
    missing = [{'name': name} for name in os_traits.get_traits()
               if name not in present]
    if missing:
        db_api.insert_ignoring_duplicates(conn, traits, missing)
