"""tests.nova.runner and the sharing out of tests.nova's command: how
nova's tests are named, chosen, shared out and their outcomes recorded,
on unittest cases of our own (nova is not needed)."""

from tests.nova import __main__ as command
from tests.nova import runner
from tests.unit import nova_runner_samples as samples

SAMPLES = 'tests.unit.nova_runner_samples'


def test_a_modules_path_names_it():
    assert runner.test_name('nova/tests/functional/test_report_client.py') \
        == 'nova.tests.functional.test_report_client'
    assert runner.test_name('nova.tests.functional.test_report_client.'
                            'SchedulerReportClientTests') == (
        'nova.tests.functional.test_report_client.SchedulerReportClientTests')


def test_a_package_stands_for_its_test_modules():
    assert runner.test_name('tests/unit/') == 'tests.unit'
    modules = runner.test_modules('tests.unit')
    assert 'tests.unit.test_nova_runner' in modules
    assert 'tests.unit.nova_runner_samples' not in modules
    assert all(name.startswith('tests.unit.test_') for name in modules)
    assert runner.test_modules(SAMPLES + '.Outcomes') == [
        SAMPLES + '.Outcomes']
    assert runner.test_modules(SAMPLES) == [SAMPLES]


def test_load_leaves_out_tests_and_classes_excluded():
    suite = runner.load(
        [SAMPLES], exclude=[SAMPLES + '.Outcomes.test_fails',
                            SAMPLES + '.SetUpFails'])
    assert [test.id() for test in suite] == [
        SAMPLES + '.Outcomes.' + name for name in (
            'test_errs', 'test_expected_failure', 'test_passes',
            'test_skipped', 'test_unbumped_write',
            'test_unexpected_success')]


def test_recorder_reports_each_outcome():
    samples.requests[0] = 0
    samples.caught.clear()
    recorder = runner.Recorder(lambda: samples.requests[0], samples.caught)
    runner.load([SAMPLES], exclude=[]).run(recorder)
    outcomes = {entry['id'].replace(SAMPLES + '.', ''):
                (entry['outcome'], entry['requests'])
                for entry in recorder.entries}
    assert outcomes == {
        'Outcomes.test_errs': ('failed', 0),
        'Outcomes.test_expected_failure': ('expected failure', 0),
        'Outcomes.test_fails': ('failed', 1),
        'Outcomes.test_passes': ('passed', 3),
        'Outcomes.test_skipped': ('skipped', 0),
        'Outcomes.test_unbumped_write': ('failed', 0),
        'Outcomes.test_unexpected_success': ('failed', 0),
        'setUpClass (SetUpFails)': ('failed', None),
    }
    details = {entry['id'].rsplit('.', 1)[-1]: entry['detail']
               for entry in recorder.entries}
    assert 'RuntimeError: broken' in details['test_errs']
    assert 'AssertionError: 1 != 2' in details['test_fails']
    assert details['test_skipped'] == 'not here'
    assert details['test_unbumped_write'] == (
        'generation guard: rows of inventories written')
    assert details['test_passes'] == ''


def test_recorder_against_the_reference_counts_no_requests():
    recorder = runner.Recorder(lambda: None, None)
    runner.load([SAMPLES + '.Outcomes.test_passes'], exclude=[]).run(
        recorder)
    [entry] = recorder.entries
    assert (entry['outcome'], entry['requests']) == ('passed', None)


def test_share_out_keeps_classes_together_and_evens_out():
    ids = (['m.A.t%d' % n for n in range(5)]
           + ['m.B.t%d' % n for n in range(3)]
           + ['m.C.t%d' % n for n in range(2)] + ['m.D.t0'])
    shares = command.share_out(ids, 2)
    assert shares == [['m.A.t%d' % n for n in range(5)] + ['m.D.t0'],
                      ['m.B.t0', 'm.B.t1', 'm.B.t2', 'm.C.t0', 'm.C.t1']]
    assert command.share_out(ids[:2], 4) == [['m.A.t0', 'm.A.t1']]


def test_differences_name_tests_whose_outcomes_differ():
    lines = command.differences({
        'placement_lite': {'m.A.t0': 'passed', 'm.A.t1': 'failed'},
        'reference': {'m.A.t0': 'passed', 'm.A.t1': 'passed'}})
    assert lines == [
        'outcomes that differ: 1',
        '  m.A.t1: failed against placement_lite, passed against reference']
