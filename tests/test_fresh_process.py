"""A process with a history answers every read as a fresh process does,
byte for byte (tests/fresh_process.py): under the reference's order, the
server's order, the server's order with dispersion, and extensions off;
on SQLite, PostgreSQL and MariaDB."""

import pytest

from tests import candidate_worlds
from tests import fresh_process
from tests import harness

pytestmark = [pytest.mark.slow, pytest.mark.mysql]

ORDER = {'placement.allocation_candidates_rank_by': 'spread:MEMORY_MB,VCPU'}
SERVERS = {
    'reference order': {},
    'server order': ORDER,
    'server order, dispersed': dict(
        ORDER, **{'placement.allocation_candidates_dispersion': 4,
                  'placement.allocation_candidates_dispersion_seed': 7}),
    'extensions off': {'api.enable_extensions': False},
}
#: (seed, hosts only).
WORLDS = ((1, False), (2, False), (3, True), (4, True))
REQUESTS = 80
#: The least share of the sequence's requests that are reads compared.
LEAST_READ = 0.5


@pytest.mark.parametrize('server', sorted(SERVERS))
@pytest.mark.parametrize('seed,hosts_only', WORLDS)
def test_a_long_lived_process_answers_as_a_fresh_one(backend, server, seed,
                                                     hosts_only):
    history = fresh_process.History(backend, seed, SERVERS[server],
                                    hosts_only)
    try:
        mismatches = history.run(REQUESTS)
    finally:
        history.close()
    assert history.reads >= LEAST_READ * REQUESTS
    assert mismatches == [], '\n'.join(map(str, mismatches))


def _mixed_hosts():
    """Six hosts: half keep VCPU and MEMORY_MB on the root and on a NUMA
    child, half keep MEMORY_MB on the child alone (before 1.29 a candidate
    takes each class from one provider, so they answer differently)."""
    providers = []
    for index in range(6):
        host = 'cn%d' % index
        if index % 2 == 0:
            providers.append({'name': host, 'inventories': {
                'VCPU': 8, 'MEMORY_MB': 8192}})
            providers.append({'name': host + '-numa', 'parent': host,
                              'inventories': {'VCPU': 4, 'MEMORY_MB': 4096}})
        else:
            providers.append({'name': host, 'inventories': {'VCPU': 8}})
            providers.append({'name': host + '-numa', 'parent': host,
                              'inventories': {
                                  'VCPU': 4,
                                  'MEMORY_MB': 16384 + index * 512}})
    return providers


#: Issue 59's sequence: clients of mixed ages asking the same resources,
#: some at 1.28, some at 1.29, some at 1.42 with the server's order.
MIXED_AGES = [
    ('resources=VCPU:1,MEMORY_MB:256&limit=3', '1.28'),
    ('resources=VCPU:1,MEMORY_MB:256&limit=3', '1.28'),
    ('resources=VCPU:1,MEMORY_MB:256&limit=3'
     '&rank_by=spread:MEMORY_MB,VCPU', '1.42'),
    ('resources=VCPU:1,MEMORY_MB:256&limit=3', '1.42'),
    ('resources=VCPU:1,MEMORY_MB:256&limit=3', '1.29'),
    ('resources=VCPU:1,MEMORY_MB:256&limit=3', '1.28'),
] * 2


def test_clients_of_mixed_ages_each_get_a_fresh_process_answer(backend):
    lived = harness.Environment(backend, **ORDER)
    try:
        candidate_worlds.load_into_db(lived.db, _mixed_hosts())
        url = lived.db.engine.url.render_as_string(hide_password=False)
        differ = []
        for query, version in MIXED_AGES:
            path = '/allocation_candidates?' + query
            _status, _headers, answer = lived.respond('GET', path,
                                                      version=version)
            fresh = harness.Environment(backend, database_url=url, **ORDER)
            try:
                _status, _headers, expected = fresh.respond(
                    'GET', path, version=version)
            finally:
                fresh.close()
            if answer != expected:
                differ.append((version, query))
    finally:
        lived.close()
    assert differ == []
