"""GET /allocation_candidates?device_profile=NAME (1.40; with the
profile's alternatives from 1.42) against the same query written by hand:
the expansion, and the candidates it finds."""

import json
import urllib.parse

import pytest

from placement_lite import errors
from placement_lite import microversion
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


def _world_with_profile(environment, world, profile):
    """``environment`` holding ``world`` and ``profile``; the profile as
    created."""
    worlds.load_into_db(environment.db, world)
    status, _headers, body = environment.request(
        'POST', '/device_profiles', profile)
    assert status == 201, body
    return body


@pytest.fixture
def numa_env(environment):
    _world_with_profile(environment, NUMA_FPGA, TWO_FPGAS)
    return environment


def _get(env, query, version='1.40'):
    return env.request('GET', '/allocation_candidates?' + query,
                       version=version)


def _query(pairs):
    return urllib.parse.urlencode(pairs)


def _assert_same_candidates(env, with_profile, by_hand, version='1.40'):
    """The query ``with_profile`` answers what ``by_hand`` answers, some
    candidates."""
    by_profile = _get(env, _query(with_profile), version)
    written = _get(env, _query(by_hand), version)
    assert written[0] == 200, written[2]
    assert by_profile[0] == 200
    assert by_profile[2] == written[2]
    assert written[2]['allocation_requests']


def test_expansion_replaces_the_parameter_in_place(numa_env):
    pairs = [('resources', 'VCPU:1'), ('device_profile', 'two-fpgas'),
             ('group_policy', 'none')]
    assert device_profiles.expand_request(
        numa_env.db, pairs, microversion.DEVICE_PROFILES) == [
        ('resources', 'VCPU:1'),
        ('resourcesdevice_profile_0', 'CUSTOM_ACCELERATOR_FPGA:1'),
        ('requireddevice_profile_0', 'CUSTOM_TYPE1'),
        ('resourcesdevice_profile_1', 'CUSTOM_ACCELERATOR_FPGA:1'),
        ('requireddevice_profile_1', '!CUSTOM_TYPE1'),
        ('group_policy', 'none')]


def test_query_without_profile_is_unchanged(numa_env):
    pairs = [('resources', 'VCPU:1')]
    assert device_profiles.expand_request(
        numa_env.db, pairs, microversion.DEVICE_PROFILES) is pairs


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
    _assert_same_candidates(numa_env, with_profile, hand_written)


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



# Hosts where alternatives matter: an A100 under h1 and h3, two L40s on
# h2 (gold), one L40 on h4; h3 has 4 VCPU, the others 8.
GPU_HOSTS = [
    {'name': 'h1', 'inventories': {'VCPU': 8}},
    {'name': 'h1_gpu', 'parent': 'h1',
     'inventories': {'CUSTOM_GPU_A100': 1}},
    {'name': 'h2', 'inventories': {'VCPU': 8, 'CUSTOM_GPU_L40': 2},
     'traits': ['CUSTOM_GOLD']},
    {'name': 'h3', 'inventories': {'VCPU': 4}},
    {'name': 'h3_gpu', 'parent': 'h3',
     'inventories': {'CUSTOM_GPU_A100': 1}},
    {'name': 'h4', 'inventories': {'VCPU': 8, 'CUSTOM_GPU_L40': 1}},
]

#: Three groups, the third an alternative to the first, the second always
#: asked for: an A100 else two L40s, and one VCPU next to the GPU.
GPU_ELSE = {
    'name': 'gpu-else',
    'groups': [
        {'resources:CUSTOM_GPU_A100': '1'},
        {'resources:VCPU': '1'},
        {'resources:CUSTOM_GPU_L40': '2'},
    ],
    'alternatives': [[0, 2]],
}
#: GPU_ELSE written by hand, where device_profile stands.
GPU_ELSE_BY_HAND = [
    ('resourcesdevice_profile_0', 'CUSTOM_GPU_A100:1'),
    ('resourcesdevice_profile_1', 'VCPU:1'),
    ('resourcesdevice_profile_2', 'CUSTOM_GPU_L40:2'),
    ('alternatives', 'device_profile_0,device_profile_2'),
]


@pytest.fixture
def gpu_env(environment):
    created = _world_with_profile(environment, GPU_HOSTS, GPU_ELSE)
    assert created['alternatives'] == [[0, 2]]
    return environment


def test_alternatives_follow_the_groups(gpu_env):
    pairs = [('resources', 'VCPU:1'), ('device_profile', 'gpu-else'),
             ('limit', '2')]
    assert device_profiles.expand_request(
        gpu_env.db, pairs, microversion.PROFILE_ALTERNATIVES) == [
        ('resources', 'VCPU:1'), *GPU_ELSE_BY_HAND, ('limit', '2')]


@pytest.mark.parametrize('version', [microversion.DEVICE_PROFILES,
                                     microversion.EXPLAIN])
def test_alternatives_need_1_42(gpu_env, version):
    """Expanding without them would ask for an A100 and two L40s at
    once: refused instead."""
    with pytest.raises(errors.BadRequest) as raised:
        device_profiles.expand_request(
            gpu_env.db, [('device_profile', 'gpu-else')], version)
    assert raised.value.code == errors.DEVICE_PROFILE_ALTERNATIVES_UNSUPPORTED
    assert 'need microversion 1.42 or later; the request is at %s.' % (
        version,) in str(raised.value)


@pytest.mark.parametrize('with_profile, by_hand', [
    # The profile alone: one set counts as one group, the second group
    # makes two, so group_policy is needed.
    ([('device_profile', 'gpu-else'), ('group_policy', 'none')],
     GPU_ELSE_BY_HAND + [('group_policy', 'none')]),
    # Isolating the VCPU from the alternative used, whichever it is: h2
    # gives its L40s and VCPU from one provider, so it has no candidate.
    ([('device_profile', 'gpu-else'),
      ('group_policy', 'isolate:device_profile_0,device_profile_1')],
     GPU_ELSE_BY_HAND
     + [('group_policy', 'isolate:device_profile_0,device_profile_1')]),
    # A set of the request's own before the profile's, and a preferred
    # trait on one of the profile's alternatives.
    ([('resources_BIG', 'VCPU:6'), ('resources_SMALL', 'VCPU:1'),
      ('alternatives', '_BIG,_SMALL'), ('device_profile', 'gpu-else'),
      ('group_policy', 'none'),
      ('preferreddevice_profile_2', 'CUSTOM_GOLD')],
     [('resources_BIG', 'VCPU:6'), ('resources_SMALL', 'VCPU:1'),
      ('alternatives', '_BIG,_SMALL'), *GPU_ELSE_BY_HAND,
      ('group_policy', 'none'),
      ('preferreddevice_profile_2', 'CUSTOM_GOLD')]),
    # The request's own set may hold a profile group no set of the
    # profile holds; ranked by free VCPU and cut at a limit.
    ([('resources_PAIR', 'VCPU:2'), ('device_profile', 'gpu-else'),
      ('alternatives', '_PAIR,device_profile_1'), ('group_policy', 'none'),
      ('rank_by', 'spread:VCPU'), ('limit', '2')],
     [('resources_PAIR', 'VCPU:2'), *GPU_ELSE_BY_HAND,
      ('alternatives', '_PAIR,device_profile_1'), ('group_policy', 'none'),
      ('rank_by', 'spread:VCPU'), ('limit', '2')]),
])
def test_alternatives_find_what_the_hand_written_query_finds(
        gpu_env, with_profile, by_hand):
    _assert_same_candidates(gpu_env, with_profile, by_hand, '1.42')


def test_first_alternative_a_tree_serves_is_used(gpu_env):
    status, _headers, body = _get(gpu_env, _query([
        ('device_profile', 'gpu-else'), ('group_policy', 'none')]),
        version='1.42')
    assert status == 200, body
    # h1 and h3 give an A100 (device_profile_0), h2 two L40s, h4 nothing.
    assert [sorted(request['mappings'])
            for request in body['allocation_requests']] == [
        ['device_profile_0', 'device_profile_1']] * 2 + [
        ['device_profile_1', 'device_profile_2']]
    assert [request['mappings']['device_profile_1']
            for request in body['allocation_requests']] == [
        [U('h1')], [U('h3')], [U('h2')]]


def test_query_set_may_not_hold_a_group_of_a_profile_set(gpu_env):
    with pytest.raises(errors.BadRequest) as raised:
        device_profiles.expand_request(gpu_env.db, [
            ('resources_X', 'VCPU:1'),
            ('alternatives', '_X, device_profile_2'),
            ('device_profile', 'gpu-else')], microversion.RANKED)
    assert raised.value.code == errors.QUERYPARAM_BAD_VALUE
    assert str(raised.value).endswith(
        "alternatives=_X, device_profile_2 names device_profile_2, already "
        "in an alternatives set of device profile 'gpu-else'.")


def test_positions_written_as_floats_are_stored_as_integers(gpu_env):
    """JSON's 1.0 is an integer to the schema: the profile keeps 1."""
    status, _headers, body = gpu_env.request('POST', '/device_profiles', {
        'name': 'floats', 'groups': GPU_ELSE['groups'],
        'alternatives': [[2.0, 0]]})
    assert status == 201, body
    shown = gpu_env.request('GET', '/device_profiles/floats')[2]
    assert json.dumps(body['alternatives']) == json.dumps(
        shown['device_profile']['alternatives']) == '[[2, 0]]'
