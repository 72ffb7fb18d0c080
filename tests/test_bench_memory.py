"""The memory benchmark (tests/bench/memory.py): served end to end on a
tiny cloud, every line of both services, and its readings sane; its
tables and the growth and soak figures from readings given."""

import json

import pytest

from tests.bench import memory

pytestmark = [pytest.mark.slow, pytest.mark.needs('postgresql')]

PHASES = [memory.AT_REST, memory.AFTER_QUERIES, memory.AFTER_CLAIMS,
          memory.AFTER_BOTH]


def _processes(phase):
    return [phase['master']] + phase['workers'] + phase['gateways']


def test_every_line_of_both_services_is_measured(tmp_path, capsys):
    path = tmp_path / 'memory.json'
    report = memory.run(memory.parse_args([
        '--hosts', '12', '--processes', '2', '--claims', '6',
        '--soak-minutes', '0.1', '--soak-interval', '2',
        '--soak-baseline', '2', '--soak-keep', '3', '--report', str(path),
        # On a busy machine one worker may take both requests of a batch
        # again and again: more batches until each worker answered.
        '--max-batches', '32']))
    assert json.loads(path.read_text()) == json.loads(json.dumps(report))
    [size] = report['sizes']
    assert [(run['service'], run['line']) for run in size['runs']] == [
        ('placement_lite', 'prefork'), ('placement_lite', 'lazy'),
        ('reference', 'lazy'), ('reference', 'prefork')]
    queries = set(size['queries'])
    assert 'nova_flavor' in queries and 'member_of_100' in queries
    assert not any(name.endswith('_explain') or name.startswith('wide_')
                   for name in queries)
    for run in size['runs']:
        name = '%s %s' % (run['service'], run['line'])
        assert [phase['phase'] for phase in run['phases']] == PHASES, name
        for phase in run['phases']:
            where = '%s, %s' % (name, phase['phase'])
            assert phase['settled'], where
            assert len(phase['workers']) == 2, where
            pids = [process['pid'] for process in _processes(phase)]
            assert len(set(pids)) == len(pids), where
            # uwsgi's HTTP router is in the tree, not a worker.
            assert len(phase['gateways']) == (
                run['service'] == 'placement_lite'), where
            for process in _processes(phase):
                assert 0 < process['uss'] <= process['pss'] \
                    <= process['rss'], (where, process)
            assert phase['tree_pss'] == sum(
                process['pss'] for process in _processes(phase))
            assert phase['tree_pss'] <= sum(
                process['rss'] for process in _processes(phase))
            for query, served in phase.get('queries', {}).items():
                # Each worker answered each query, every request did.
                assert served['unserved'] == [], (where, query)
                assert sum(served['statuses'].values()) == \
                    2 * served['batches'], (where, query)
                assert set(served['statuses']) <= (
                    {'200'} if run['service'] == 'placement_lite'
                    # The reference sends trait names where it means
                    # ids when a forbidden trait is on no provider.
                    else {'200', '500'}), (where, query)
        assert 'queries' in run['phases'][1]
        storm = run['phases'][2]['storm']
        assert (storm['claims'], storm['statuses']) == (
            6, {'PUT 204': 6}), name
        assert storm['reads'] >= 1
        soak = run['soak']
        assert soak['deletions'] >= 1 and set(soak['statuses']) <= {
            'PUT 204', 'DELETE 204'}, name
        assert len(soak['samples']) >= 3
        assert sorted(soak['workers']) == sorted(
            str(worker['pid']) for worker in run['phases'][-1]['workers'])
    lite = {run['line']: run['phases'][0] for run in size['runs']
            if run['service'] == 'placement_lite'}
    # Pre-forked, the workers share what the master built; with lazy-apps
    # the master builds nothing.
    assert memory._largest(lite['prefork'])['uss'] < \
        lite['prefork']['master']['rss'] / 4
    assert lite['lazy']['master']['rss'] < lite['prefork']['master']['rss'] / 2
    printed = capsys.readouterr().out
    assert memory.size_table(size) in printed
    for run in size['runs']:
        for phase in PHASES:
            assert memory.size_table(size).count('| %s | %s | %s |' % (
                run['service'], run['line'], phase)) == 1
    assert memory.soak_table(report['sizes']) in printed
    assert printed.count('| 12 | placement_lite | lazy | 0.1 |') == 2


def _phase(master, workers, phase=memory.AT_REST):
    processes = [dict(pid=pid, rss=rss, pss=pss, uss=uss)
                 for pid, (rss, pss, uss) in enumerate(workers, 2)]
    master = dict(pid=1, rss=master[0], pss=master[1], uss=master[2])
    return {'phase': phase, 'master': master, 'workers': processes,
            'gateways': [], 'settled': True, 'seconds': 1.0,
            'tree_pss': master['pss'] + sum(p['pss'] for p in processes)}


def _size(hosts, workers):
    return {'hosts': hosts, 'providers': 7 * hosts, 'date': 'today',
            'commit': 'abc', 'seconds': 10, 'runs': [{
                'service': 'placement_lite', 'line': 'prefork',
                'processes': 2, 'start_seconds': 1, 'seconds': 5,
                'phases': [_phase((100, 50, 1), workers)]}]}


def test_growth_is_the_largest_worker_s_per_thousand_hosts():
    mib = 1024
    sizes = [_size(1000, [(100 * mib, 60 * mib, 10 * mib),
                          (90 * mib, 50 * mib, 20 * mib)]),
             _size(5000, [(140 * mib, 80 * mib, 30 * mib)]),
             _size(20000, [(200 * mib, 100 * mib, 60 * mib)])]
    found = memory.growth(sizes)
    steps = found['placement_lite', 'prefork', memory.AT_REST]
    assert [(low, high) for low, high, _each in steps] == [
        (1000, 5000), (5000, 20000), (1000, 20000)]
    # The largest is the worker of the largest USS.
    assert steps[0][2]['uss'] == pytest.approx(10 / 4)
    assert steps[0][2]['rss'] == pytest.approx(50 / 4)
    assert steps[2][2]['pss'] == pytest.approx(50 / 19)
    table = memory.growth_table(sizes)
    assert '| placement_lite | prefork | at rest | 12.5 / 7.5 / 2.5;' in table
    rendered = memory.render({'sizes': sizes})
    assert '| placement_lite | prefork | at rest | 0 | 0 | 0 | 90 | 50 ' \
        '| 20 | 110 |' in rendered


def test_a_soak_tells_each_worker_s_change_from_its_first_minute():
    samples = [{'seconds': 0, 'workers': {'7': 50}},
               {'seconds': 60, 'workers': {'7': 100, '8': 200}},
               {'seconds': 90, 'workers': {'7': 120, '8': 190}},
               {'seconds': 120, 'workers': {'7': 105, '8': 180, '9': 5}}]
    found = memory.soak_changes(samples, 60)
    assert found['respawned'] == ['9']
    assert found['workers']['7'] == {
        'first': 100, 'last': 105, 'max': 120,
        'change': pytest.approx(0.05), 'largest change': pytest.approx(0.2)}
    assert found['workers']['8']['change'] == pytest.approx(-0.1)
