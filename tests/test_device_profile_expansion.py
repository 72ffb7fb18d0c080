"""GET /allocation_candidates?device_profile=NAME (1.40) against the same
query written by hand: the expansion, and the candidates it finds."""

import urllib.parse

import pytest

from placement_lite import errors
from placement_lite.domain import device_profiles
from tests import candidate_worlds as worlds

U = worlds.uuid_of

# Seed 002's same_subtree model: a compute node, two NUMA nodes, three FPGAs.
NUMA_FPGA = [
    {'name': 'cn', 'traits': ['CUSTOM_WINDOWS_LICENSE_POOL']},
    {'name': 'numa0', 'parent': 'cn',
     'inventories': {'VCPU': 4, 'MEMORY_MB': 2048},
     'traits': ['HW_NUMA_ROOT']},
    {'name': 'numa1', 'parent': 'cn',
     'inventories': {'VCPU': 4, 'MEMORY_MB': 2048},
     'traits': ['HW_NUMA_ROOT']},
    {'name': 'fpga0_0', 'parent': 'numa0',
     'inventories': {'CUSTOM_ACCELERATOR_FPGA': 1},
     'traits': ['CUSTOM_TYPE1']},
    {'name': 'fpga1_0', 'parent': 'numa1',
     'inventories': {'CUSTOM_ACCELERATOR_FPGA': 1},
     'traits': ['CUSTOM_TYPE1']},
    {'name': 'fpga1_1', 'parent': 'numa1',
     'inventories': {'CUSTOM_ACCELERATOR_FPGA': 1},
     'traits': ['CUSTOM_TYPE2']},
]

TWO_FPGAS = {
    'name': 'two-fpgas',
    'groups': [
        {'resources:custom-accelerator-fpga': '1',
         'trait:CUSTOM_TYPE1': 'required',
         'accel:attach_target': 'VM'},
        {'resources:CUSTOM_ACCELERATOR_FPGA': '1',
         'trait:custom_type1': 'forbidden',
         'accel:function_name': 'resnet'},
    ],
}


@pytest.fixture
def numa_env(environment):
    worlds.load_into_db(environment.db, NUMA_FPGA)
    status, _headers, body = environment.request(
        'POST', '/device_profiles', TWO_FPGAS)
    assert status == 201, body
    return environment


def _get(env, query, version='1.40'):
    return env.request('GET', '/allocation_candidates?' + query,
                       version=version)


def _query(pairs):
    return urllib.parse.urlencode(pairs)


def test_expansion_replaces_the_parameter_in_place(numa_env):
    pairs = [('resources', 'VCPU:1'), ('device_profile', 'two-fpgas'),
             ('group_policy', 'none')]
    assert device_profiles.expand_request(numa_env.db, pairs) == [
        ('resources', 'VCPU:1'),
        ('resourcesdevice_profile_0', 'CUSTOM_ACCELERATOR_FPGA:1'),
        ('requireddevice_profile_0', 'CUSTOM_TYPE1'),
        ('resourcesdevice_profile_1', 'CUSTOM_ACCELERATOR_FPGA:1'),
        ('requireddevice_profile_1', '!CUSTOM_TYPE1'),
        ('group_policy', 'none')]


def test_query_without_profile_is_unchanged(numa_env):
    pairs = [('resources', 'VCPU:1')]
    assert device_profiles.expand_request(numa_env.db, pairs) is pairs


@pytest.mark.parametrize('hand_written, with_profile', [
    # The profile alone (two suffixed groups need a group_policy).
    ([('resourcesdevice_profile_0', 'CUSTOM_ACCELERATOR_FPGA:1'),
      ('requireddevice_profile_0', 'CUSTOM_TYPE1'),
      ('resourcesdevice_profile_1', 'CUSTOM_ACCELERATOR_FPGA:1'),
      ('requireddevice_profile_1', '!CUSTOM_TYPE1'),
      ('group_policy', 'isolate')],
     [('device_profile', 'two-fpgas'), ('group_policy', 'isolate')]),
    # With the request's own groups, a resourceless NUMA group and
    # same_subtree naming the profile's suffixes.
    ([('resources_COMPUTE', 'VCPU:1,MEMORY_MB:256'),
      ('required_NUMA', 'HW_NUMA_ROOT'),
      ('resourcesdevice_profile_0', 'CUSTOM_ACCELERATOR_FPGA:1'),
      ('requireddevice_profile_0', 'CUSTOM_TYPE1'),
      ('resourcesdevice_profile_1', 'CUSTOM_ACCELERATOR_FPGA:1'),
      ('requireddevice_profile_1', '!CUSTOM_TYPE1'),
      ('group_policy', 'none'),
      ('same_subtree', '_NUMA,_COMPUTE,device_profile_0,device_profile_1')],
     [('resources_COMPUTE', 'VCPU:1,MEMORY_MB:256'),
      ('required_NUMA', 'HW_NUMA_ROOT'),
      ('device_profile', 'two-fpgas'),
      ('group_policy', 'none'),
      ('same_subtree', '_NUMA,_COMPUTE,device_profile_0,device_profile_1')]),
    # root_required and limit apply to the expanded request too.
    ([('resources', 'VCPU:1'),
      ('resourcesdevice_profile_0', 'CUSTOM_ACCELERATOR_FPGA:1'),
      ('requireddevice_profile_0', 'CUSTOM_TYPE1'),
      ('resourcesdevice_profile_1', 'CUSTOM_ACCELERATOR_FPGA:1'),
      ('requireddevice_profile_1', '!CUSTOM_TYPE1'),
      ('group_policy', 'none'), ('limit', '1'),
      ('root_required', 'CUSTOM_WINDOWS_LICENSE_POOL')],
     [('resources', 'VCPU:1'), ('device_profile', 'two-fpgas'),
      ('group_policy', 'none'), ('limit', '1'),
      ('root_required', 'CUSTOM_WINDOWS_LICENSE_POOL')]),
])
def test_profile_finds_what_the_hand_written_query_finds(
        numa_env, hand_written, with_profile):
    by_hand = _get(numa_env, _query(hand_written))
    by_profile = _get(numa_env, _query(with_profile))
    assert by_hand[0] == 200, by_hand[2]
    assert by_profile[0] == 200
    assert by_profile[2] == by_hand[2]
    assert by_hand[2]['allocation_requests']


def test_same_subtree_keeps_fpgas_with_their_numa_node(numa_env):
    status, _headers, body = _get(numa_env, _query([
        ('resources_COMPUTE', 'VCPU:1,MEMORY_MB:256'),
        ('device_profile', 'two-fpgas'), ('group_policy', 'none'),
        ('same_subtree', '_COMPUTE,device_profile_0,device_profile_1')]))
    assert status == 200, body
    # Only numa1 holds a TYPE1 and a non-TYPE1 FPGA.
    assert [request['mappings'] for request in body['allocation_requests']] \
        == [{'_COMPUTE': [U('numa1')], 'device_profile_0': [U('fpga1_0')],
             'device_profile_1': [U('fpga1_1')]}]


def test_unknown_profile(numa_env):
    status, _headers, body = _get(numa_env, 'device_profile=nope')
    assert status == 400
    assert body['errors'][0]['code'] == errors.DEVICE_PROFILE_UNKNOWN
    assert "No device profile named 'nope'." in body['errors'][0]['detail']


def test_suffix_already_in_the_request(numa_env):
    status, _headers, body = _get(numa_env, _query([
        ('device_profile', 'two-fpgas'), ('group_policy', 'none'),
        ('requireddevice_profile_1', 'CUSTOM_TYPE2')]))
    assert status == 400
    assert body['errors'][0]['code'] == errors.DEVICE_PROFILE_SUFFIX_IN_USE
    assert 'requireddevice_profile_1' in body['errors'][0]['detail']


def test_one_profile_per_request(numa_env):
    status, _headers, body = _get(numa_env, _query([
        ('device_profile', 'two-fpgas'), ('device_profile', 'two-fpgas'),
        ('group_policy', 'none')]))
    assert status == 400
    assert body['errors'][0]['code'] == errors.ILLEGAL_DUPLICATE_QUERYPARAM


def test_expanded_request_obeys_group_policy_rule(numa_env):
    status, _headers, body = _get(numa_env, 'device_profile=two-fpgas')
    assert status == 400
    assert 'The "group_policy" parameter is required' in \
        body['errors'][0]['detail']


def test_below_1_40_the_parameter_is_unknown(numa_env):
    """Refused as the reference refuses any parameter it does not know."""
    status, _headers, body = _get(
        numa_env, 'resources=VCPU:1&device_profile=two-fpgas',
        version='1.39')
    assert status == 400
    detail = body['errors'][0]['detail']
    assert "'device_profile' does not match any of the regexes" in detail
    _status, _headers, other = _get(
        numa_env, 'resources=VCPU:1&device_profilx=two-fpgas',
        version='1.39')
    assert detail == other['errors'][0]['detail'].replace(
        'device_profilx', 'device_profile')

