"""Device profile rows: insert, select by uuid or names, delete.

``groups`` is stored as JSON text so that the order of the groups, and of
the keys inside each group, is kept exactly as created; ``alternatives``
too, or NULL when the profile has none.
"""

import json

import sqlalchemy as sa

from placement_lite.db import tables

dp = tables.device_profiles


def insert_profile(conn, uuid, name, description, groups, alternatives,
                   created_at):
    conn.execute(dp.insert().values(
        uuid=uuid, name=name, description=description,
        groups=json.dumps(groups),
        alternatives=json.dumps(alternatives) if alternatives else None,
        created_at=created_at))


def _select():
    return sa.select(dp.c.id, dp.c.uuid, dp.c.name, dp.c.description,
                     dp.c.groups, dp.c.alternatives, dp.c.created_at,
                     dp.c.updated_at).order_by(dp.c.id)


def _as_dict(row):
    values = row._asdict()
    values['groups'] = json.loads(values['groups'])
    values['alternatives'] = json.loads(values['alternatives'] or '[]')
    return values


def all_profiles(conn):
    """Every profile, oldest first, as dicts with the groups decoded."""
    return [_as_dict(row) for row in conn.execute(_select())]


def profiles_by_names(conn, names):
    """The profiles among ``names`` that exist, oldest first."""
    query = _select().where(dp.c.name.in_(sorted(set(names))))
    return [_as_dict(row) for row in conn.execute(query)]


def profile_by_uuid(conn, uuid):
    row = conn.execute(_select().where(dp.c.uuid == uuid)).first()
    return _as_dict(row) if row else None


def profile_by_name(conn, name):
    row = conn.execute(_select().where(dp.c.name == name)).first()
    return _as_dict(row) if row else None


def name_exists(conn, name):
    return conn.execute(
        sa.select(dp.c.id).where(dp.c.name == name)).first() is not None


def delete_profiles(conn, ids):
    conn.execute(dp.delete().where(dp.c.id.in_(sorted(set(ids)))))
