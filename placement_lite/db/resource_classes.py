"""SQL for resource classes (standard ones have ids below the first custom id)."""

import sqlalchemy as sa

from placement_lite.db import lookups
from placement_lite.db import tables

rc = tables.resource_classes


def all_resource_classes(conn):
    """Every resource class row, standard classes first (by id)."""
    return conn.execute(sa.select(rc).order_by(rc.c.id)).all()


def resource_class_by_name(conn, name):
    return conn.execute(sa.select(rc).where(rc.c.name == name)).first()


def next_custom_id(conn, first_custom_id):
    """The id a new custom class gets: one past the highest, at least ``first_custom_id``."""
    highest = conn.execute(sa.select(sa.func.max(rc.c.id))).scalar()
    if highest is None or highest < first_custom_id:
        return first_custom_id
    return highest + 1


def try_insert_resource_class(conn, class_id, name):
    """Create a class; returns its row, or None when the id or the name is taken.

    A savepoint keeps the caller's transaction usable after the refusal.
    """
    try:
        with conn.begin_nested():
            conn.execute(rc.insert().values(id=class_id, name=name,
                                            created_at=lookups.utcnow()))
    except sa.exc.IntegrityError:
        return None
    return resource_class_by_name(conn, name)


def try_rename_resource_class(conn, class_id, new_name):
    """Rename a class; returns its row, or None when another class has the name."""
    try:
        with conn.begin_nested():
            conn.execute(rc.update().where(rc.c.id == class_id)
                         .values(name=new_name, updated_at=lookups.utcnow()))
    except sa.exc.IntegrityError:
        return None
    return resource_class_by_name(conn, new_name)


def delete_resource_class(conn, class_id):
    conn.execute(rc.delete().where(rc.c.id == class_id))
