"""nova 34.0.0's functional tests of Placement, against placement_lite.

nova's fixture for Placement is made to serve placement_lite
(tests/nova/fixture.py), each test on a fresh SQLite database, and these
of nova's test modules (and four tests of test_servers) run unchanged in
nova's own environment (tests/nova/environment.py). One pytest test per
chunk below, so that pytest-xdist spreads them; each fails when one of
nova's tests fails (or is skipped) and names it, and each chunk's counts
are summed on the terminal summary's line "nova's functional tests
against placement_lite" (tests/conftest.py).

Left out: none of these modules' tests.
"""

import pytest

from tests.nova import environment

pytestmark = pytest.mark.slow

PCI = 'nova.tests.functional.libvirt.test_pci_in_placement.'
SERVERS = 'nova.tests.functional.test_servers.'

#: {chunk: (nova's test names, how many tests they hold)}. A module, or
#: for the slowest one (about 2 minutes in one process), its classes.
CHUNKS = {
    'test_report_client': (
        ['nova.tests.functional.test_report_client'], 18),
    'test_servers_provider_tree': (
        ['nova.tests.functional.test_servers_provider_tree'], 11),
    'test_pci_in_placement-inventory': (
        [PCI + 'PlacementPCIInventoryReportingTests'], 21),
    'test_pci_in_placement-healing': (
        [PCI + 'PlacementPCIAllocationHealingTests'], 6),
    'test_pci_in_placement-aliases': (
        [PCI + 'SimpleRCAndTraitBasedPCIAliasTests',
         PCI + 'RCAndTraitBasedPCIAliasTests'], 9),
    # Pass only when the fixture leaves oslo.policy's shared default as
    # the reference's does (tests/nova/fixture.py).
    'test_servers-overquota': (
        [SERVERS + case + '.test_resize_server_overquota_' + test
         for case in ('ServersTest', 'ServersTestV21')
         for test in ('multiple_users', 'user_quota')], 4),
}


@pytest.fixture(scope='session')
def nova_python():
    """nova's environment's interpreter, and the seconds spent building
    the environment in this process (0 when it was there already)."""
    return environment.python_when_built()


@pytest.mark.parametrize('chunk', list(CHUNKS))
def test_nova_functional(chunk, nova_python, tmp_path, record_property):
    names, expected_count = CHUNKS[chunk]
    interpreter, build_seconds = nova_python
    if build_seconds:
        record_property('nova_environment_built_seconds', build_seconds)
    report = environment.run(interpreter, names,
                             str(tmp_path / 'report.json'))
    tests = report['tests']
    outcomes = [test['outcome'] for test in tests]
    record_property('nova_tests', {
        'chunk': chunk, 'ran': len(tests),
        'passed': outcomes.count('passed'),
        'skipped': outcomes.count('skipped'),
        'failed': len(tests) - outcomes.count('passed')
        - outcomes.count('skipped')})

    assert report['placement'] == 'placement_lite'
    assert report['reference_loaded'] is False
    not_passed = [test for test in tests if test['outcome'] != 'passed']
    assert not not_passed, '\n\n'.join(
        ["%d of nova's tests did not pass: %s" % (
            len(not_passed), ', '.join(test['id'] for test in not_passed))]
        + ['%s %s:\n%s' % (test['outcome'].upper(), test['id'],
                           test['detail'][-6000:]) for test in not_passed])
    assert len(tests) == expected_count
    assert all(test['requests'] > 0 for test in tests), [
        test['id'] for test in tests if not test['requests']]
