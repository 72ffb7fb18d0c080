"""The fast renderer of allocation candidates gives json.dumps's bytes."""

import json

import falcon

from placement_lite.handlers import util

A = '0b52ec9c-6a3e-4b0f-9d2e-5c7a3f1d2e01'
B = '9f1c2d3e-4b5a-4c6d-8e7f-0a1b2c3d4e5f'
BODY = {
    'allocation_requests': [
        {'allocations': {A: {'resources': {'VCPU': 2, 'MEMORY_MB': 2048}},
                         B: {'resources': {'DISK_GB': 20}}},
         'mappings': {'': [A, B], '_NET-1': [B]}},
        {'allocations': [{'resource_provider': {'uuid': A},
                          'resources': {'CUSTOM_FPGA_X': 1}}]},
    ],
    'provider_summaries': {
        A: {'resources': {'VCPU': {'capacity': 64, 'used': 0}},
            'traits': ['HW_CPU_X86_AVX2', 'CUSTOM_PHYSNET_NET0'],
            'parent_provider_uuid': None, 'root_provider_uuid': A},
        B: {'resources': {}, 'traits': [],
            'parent_provider_uuid': A, 'root_provider_uuid': A},
    },
}


def test_same_bytes_as_json_dumps():
    resp = falcon.Response()
    util.render_plain_strings(resp, BODY)
    assert resp.data == json.dumps(BODY).encode()
    assert resp.content_type == 'application/json'
    assert resp.status == 200
