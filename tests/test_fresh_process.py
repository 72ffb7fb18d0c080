"""A process with a history answers every read as a fresh process does,
byte for byte (tests/fresh_process.py): under the reference's order, the
server's order, the server's order with dispersion, and extensions off;
on SQLite, PostgreSQL and MariaDB."""

import pytest

from tests import fresh_process

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
