"""The state of a MariaDB Galera node, for ``placement-lite galera-check``."""

import sqlalchemy as sa

#: wsrep_local_state of a node that has all the cluster's transactions and
#: takes writes.
SYNCED = 4


def node_state(conn):
    """(wsrep_local_state as a number, its name, wsrep_ready) of the node
    ``conn`` is on; (None, None, None) for a server that is not a Galera
    node (wsrep off)."""
    status = dict(conn.execute(sa.text(
        "SHOW GLOBAL STATUS WHERE Variable_name IN ('wsrep_local_state', "
        "'wsrep_local_state_comment', 'wsrep_ready')")).all())
    state = status.get('wsrep_local_state')
    return (int(state) if state is not None else None,
            status.get('wsrep_local_state_comment'),
            status.get('wsrep_ready'))
