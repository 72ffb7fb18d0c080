"""``placement-lite capacity``: the report per class, aggregate and trait,
and how many more of a flavor fit, which must be what allocation
candidates give when each candidate is claimed until none is left."""

import sys
import uuid

import pytest

import placement_lite
from placement_lite import cli
from placement_lite.domain import capacity

FLAVOR = {'VCPU': 4, 'MEMORY_MB': 4096}
AGGREGATE = '0a000000-0000-4000-8000-00000000000a'
#: What the world below holds, per class: total, reserved, capacity, used.
REPORT = [
    ('', 'DISK_GB', 100, 0, 100, 0),
    ('', 'MEMORY_MB', 16384 + 8192 + 32768 + 65536, 512,
     int((16384 - 512) * 1.5) + 8192 + 32768 + 65536, 4096),
    ('', 'VCPU', 8 + 4 + 16 + 16, 1, 14 + 4 + 16 + 16, 2),
]
#: numa0 takes 14 // 4 = 3, numa1 one more: 4, with room for 5 in
#: memory; "stepped" 1 (its memory, half used); "narrow" none (VCPU
#: max_unit 2); "memory only" none.
FITS = 4 + 1


def _provider(env, name, inventories, parent=None):
    provider = str(uuid.uuid4())
    body = {'name': name, 'uuid': provider}
    if parent:
        body['parent_provider_uuid'] = parent
    assert env.request('POST', '/resource_providers', body)[0] == 200
    if inventories:
        assert env.request(
            'PUT', '/resource_providers/%s/inventories' % provider,
            {'resource_provider_generation': 0,
             'inventories': inventories})[0] == 200
    return provider


def _world(env):
    """Four hosts, one with two NUMA nodes; 2 VCPU and 4096 MB used."""
    numa = _provider(env, 'numa host', {'MEMORY_MB': {
        'total': 16384, 'reserved': 512, 'allocation_ratio': 1.5}})
    _provider(env, 'numa0', {'VCPU': {
        'total': 8, 'reserved': 1, 'allocation_ratio': 2.0, 'max_unit': 6}},
        parent=numa)
    _provider(env, 'numa1', {'VCPU': {'total': 4}}, parent=numa)
    stepped = _provider(env, 'stepped', {
        'VCPU': {'total': 16, 'step_size': 2},
        'MEMORY_MB': {'total': 8192}})
    _provider(env, 'narrow', {'VCPU': {'total': 16, 'max_unit': 2},
                              'MEMORY_MB': {'total': 32768}})
    memory_only = _provider(env, 'memory only', {
        'MEMORY_MB': {'total': 65536}, 'DISK_GB': {'total': 100}})
    assert env.request('PUT', '/allocations/%s' % uuid.uuid4(), {
        'allocations': {stepped: {'resources': {'VCPU': 2,
                                                'MEMORY_MB': 4096}}},
        'project_id': 'p', 'user_id': 'u', 'consumer_generation': None},
        version='1.28')[0] == 204
    for provider, generation in ((numa, 1), (memory_only, 1)):
        assert env.request(
            'PUT', '/resource_providers/%s/aggregates' % provider,
            {'aggregates': [AGGREGATE],
             'resource_provider_generation': generation},
            version='1.19')[0] == 200


def _claim_until_none_fits(env, resources):
    query = ','.join('%s:%d' % item for item in resources.items())
    claimed = 0
    while True:
        status, _headers, body = env.request(
            'GET', '/allocation_candidates?limit=1&resources=' + query,
            version='1.34')
        assert status == 200
        if not body['allocation_requests']:
            return claimed
        [candidate] = body['allocation_requests']
        assert env.request('PUT', '/allocations/%s' % uuid.uuid4(), {
            'allocations': candidate['allocations'], 'project_id': 'p',
            'user_id': 'u', 'consumer_generation': None},
            version='1.34')[0] == 204
        claimed += 1


def test_fits_equals_the_candidates_claimed(environment):
    _world(environment)
    providers = capacity.read(environment.db)

    assert capacity.fits(providers, FLAVOR) == FITS
    assert _claim_until_none_fits(environment, FLAVOR) == FITS
    assert capacity.fits(capacity.read(environment.db), FLAVOR) == 0


def test_the_report_per_class_and_per_aggregate(environment):
    _world(environment)

    assert [tuple(row) for row in capacity.report(
        capacity.read(environment.db))] == REPORT
    by_aggregate = capacity.report(
        capacity.read(environment.db, capacity.BY_AGGREGATE),
        capacity.BY_AGGREGATE)
    assert [tuple(row) for row in by_aggregate
            if row.group == AGGREGATE] == [
        (AGGREGATE, 'DISK_GB', 100, 0, 100, 0),
        (AGGREGATE, 'MEMORY_MB', 16384 + 65536, 512,
         int((16384 - 512) * 1.5) + 65536, 0)]


def test_the_command(environment, tmp_path, capsys):
    _world(environment)
    config = tmp_path / 'placement.conf'
    config.write_text('[placement_database]\nconnection = %s\n'
                      % environment.db.engine.url.render_as_string(
                          hide_password=False))
    chart = tmp_path / 'capacity.png'

    cli.main(['--config-file', str(config), 'capacity',
              '--fits', 'resources=VCPU:4,MEMORY_MB:4096',
              '--chart', str(chart)])

    lines = capsys.readouterr().out.splitlines()
    assert lines[1:6] == [
        '| Resource class |  Total | Reserved | Capacity | Used |   Free '
        '| Used % |',
        lines[2],
        '| DISK_GB        |    100 |        0 |      100 |    0 |    100 '
        '|    0.0 |',
        '| MEMORY_MB      | 122880 |      512 |   130304 | 4096 | 126208 '
        '|    3.1 |',
        '| VCPU           |     44 |        1 |       50 |    2 |     48 '
        '|    4.0 |']
    assert lines[7:] == ['5 more of VCPU:4,MEMORY_MB:4096 fit',
                         'chart written to %s' % chart]
    assert chart.read_bytes()[:8] == b'\x89PNG\r\n\x1a\n'


@pytest.mark.parametrize('fits, message', [
    ('resources=VCPU', "--fits: 'VCPU' is not CLASS:AMOUNT (expected "
                       "resources=VCPU:4,MEMORY_MB:8192)"),
    ('VCPU:four', "--fits: the amount of VCPU is not an integer: 'four'"),
    ('VCPU:0', '--fits: the amount of VCPU must be at least 1, not 0'),
    ('VCPU:1,VCPU:2', '--fits: VCPU is named twice'),
])
def test_a_bad_flavor_is_one_line(fits, message, capsys):
    with pytest.raises(SystemExit) as exited:
        cli.main(['capacity', '--fits', fits])
    assert exited.value.code == 1
    assert capsys.readouterr().err == 'placement-lite: error: %s\n' % message


def test_a_chart_without_matplotlib_is_one_line(environment, tmp_path,
                                                capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, 'matplotlib', None)
    monkeypatch.delitem(sys.modules, 'placement_lite.charts',
                        raising=False)
    monkeypatch.delattr(placement_lite, 'charts', raising=False)
    config = tmp_path / 'placement.conf'
    config.write_text('[placement_database]\nconnection = %s\n'
                      % environment.db.engine.url.render_as_string(
                          hide_password=False))
    with pytest.raises(SystemExit):
        cli.main(['--config-file', str(config), 'capacity', '--chart',
                  str(tmp_path / 'c.png')])
    assert capsys.readouterr().err.startswith(
        "placement-lite: error: --chart needs matplotlib (pip install "
        "'placement-lite[charts]')")


def test_the_report_of_no_cloud_is_empty():
    assert capacity.report([]) == []
    assert capacity.fits([], FLAVOR) == 0


def test_the_report_per_trait_counts_a_provider_in_each_of_its_traits():
    inventory = capacity.Inventory(total=10, reserved=0, allocation_ratio=1.0,
                                   min_unit=1, max_unit=10, step_size=1,
                                   used=3)
    providers = [
        capacity.Provider('a', 'a', {'VCPU': inventory},
                          traits=frozenset({'HW_CPU_X86_AVX', 'CUSTOM_GOLD'})),
        capacity.Provider('b', 'b', {'VCPU': inventory})]

    assert [tuple(row) for row in capacity.report(
        providers, capacity.BY_TRAIT)] == [
        ('-', 'VCPU', 10, 0, 10, 3),
        ('CUSTOM_GOLD', 'VCPU', 10, 0, 10, 3),
        ('HW_CPU_X86_AVX', 'VCPU', 10, 0, 10, 3)]
