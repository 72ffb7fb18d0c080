"""The renderer of allocation candidates gives json.dumps's bytes, at
every microversion shape, whatever the strings hold. (What a process
keeps rendered: tests/test_cloud_store.py.)"""

import json
import types

import falcon
import pytest

from placement_lite.db.cloud import summaries
from placement_lite.engine import Candidates
from placement_lite.engine import combine
from placement_lite.handlers import candidates_answer
from placement_lite.handlers import responses

A = '0b52ec9c-6a3e-4b0f-9d2e-5c7a3f1d2e01'
B = '9f1c2d3e-4b5a-4c6d-8e7f-0a1b2c3d4e5f'


def test_json_bytes_are_the_body():
    resp = falcon.Response()
    responses.render_json_bytes(resp, b'{"a": 1}')
    assert resp.data == b'{"a": 1}'
    assert resp.content_type == 'application/json'
    assert resp.status == 200


def test_json_pieces_go_out_as_they_are_with_their_whole_length():
    resp = falcon.Response()
    pieces = [b'{"a": ', b'[1, 2', b']}']
    responses.render_json_pieces(resp, pieces)
    assert resp.stream is pieces
    assert resp.data is None
    assert resp.content_length == '13'
    assert resp.content_type == 'application/json'
    assert resp.status == 200


class _Shown(dict):
    """{provider id: summaries.ProviderSummary}, rendered as
    summaries.Shown renders what it does not keep."""

    def rendered(self, shape, render, piece):
        return summaries.in_pieces([b', '.join(
            render(summary, shape) for summary in self.values())], piece)


def _summary(uuid, parent, vcpu_used, traits):
    return summaries.ProviderSummary(
        uuid, parent, A,
        (('VCPU', 8, vcpu_used), ('DISK_GB', 100, 0)), traits)


FOUND = Candidates(
    [combine.Candidate(1, {1: {'VCPU': 2}, 2: {'DISK_GB': 10}},
                       {'': {2, 1}})],
    {1: A, 2: B},
    _Shown({1: _summary(A, None, 3, ('HW_CPU_X86_AVX2',)),
            2: _summary(B, A, 0, ())}))
REQUEST = types.SimpleNamespace(requested_resource_classes={'VCPU',
                                                            'DISK_GB'})
A_RESOURCES = {'VCPU': {'capacity': 8, 'used': 3},
               'DISK_GB': {'capacity': 100, 'used': 0}}
B_RESOURCES = {'VCPU': {'capacity': 8, 'used': 0},
               'DISK_GB': {'capacity': 100, 'used': 0}}
ALLOCATIONS_FROM_1_12 = {A: {'resources': {'VCPU': 2}},
                         B: {'resources': {'DISK_GB': 10}}}
SUMMARIES_FROM_1_29 = {
    A: {'resources': A_RESOURCES, 'traits': ['HW_CPU_X86_AVX2'],
        'parent_provider_uuid': None, 'root_provider_uuid': A},
    B: {'resources': B_RESOURCES, 'traits': [], 'parent_provider_uuid': A,
        'root_provider_uuid': A}}


@pytest.mark.parametrize('version, expected', [
    ((1, 10), {
        'allocation_requests': [{'allocations': [
            {'resource_provider': {'uuid': A}, 'resources': {'VCPU': 2}},
            {'resource_provider': {'uuid': B},
             'resources': {'DISK_GB': 10}}]}],
        'provider_summaries': {A: {'resources': A_RESOURCES},
                               B: {'resources': B_RESOURCES}}}),
    ((1, 29), {
        'allocation_requests': [{'allocations': ALLOCATIONS_FROM_1_12}],
        'provider_summaries': SUMMARIES_FROM_1_29}),
    ((1, 34), {
        'allocation_requests': [{'allocations': ALLOCATIONS_FROM_1_12,
                                 'mappings': {'': [A, B]}}],
        'provider_summaries': SUMMARIES_FROM_1_29}),
], ids=['1.10', '1.29', '1.34'])
def test_candidates_render_as_json_dumps_would(version, expected):
    rendered = b''.join(candidates_answer.render(FOUND, REQUEST,
                                                     version))
    assert rendered == json.dumps(expected).encode()


def test_a_large_body_is_made_in_pieces(monkeypatch):
    """An answer's body comes in pieces of about BODY_PIECE bytes, which
    join into json.dumps's bytes."""
    monkeypatch.setattr(candidates_answer, 'BODY_PIECE', 100)
    found = Candidates(
        [combine.Candidate(1, {1: {'VCPU': n}}, {'': {1}})
         for n in range(1, 41)], {1: A}, _Shown({1: _summary(
             A, None, 3, ('HW_CPU_X86_AVX2',) * 20)}))
    pieces = candidates_answer.render(found, REQUEST, (1, 34))
    assert b''.join(pieces) == json.dumps({
        'allocation_requests': [
            {'allocations': {A: {'resources': {'VCPU': n}}},
             'mappings': {'': [A]}} for n in range(1, 41)],
        'provider_summaries': {A: {
            'resources': A_RESOURCES,
            'traits': ['HW_CPU_X86_AVX2'] * 20,
            'parent_provider_uuid': None, 'root_provider_uuid': A}}}
    ).encode()
    # One or two requests a piece (each ~90 bytes), the summary cut at
    # 100 bytes.
    requests = pieces[1:pieces.index(b'], "provider_summaries": {')]
    assert len(requests) == 40
    summary = pieces[len(requests) + 2:-1]
    assert [len(piece) for piece in summary] == [100] * 6 + [16]


def test_strings_are_written_as_json_dumps_writes_them():
    """Separators, quotes and non-ASCII characters in names come out as
    json.dumps writes them: no rewriting of the bytes made."""
    odd = 'CUSTOM_A, B: "C" \u00e9\\'
    summary = summaries.ProviderSummary(
        A, None, A, ((odd, 1, 0),), (odd,))
    found = Candidates(
        [combine.Candidate(1, {1: {odd: 1}}, {'_' + odd: {1}})], {1: A},
        _Shown({1: summary}))
    assert b''.join(candidates_answer.render(found, REQUEST,
                                                 (1, 17))) == (
        json.dumps({
            'allocation_requests': [{'allocations': {
                A: {'resources': {odd: 1}}}}],
            'provider_summaries': {A: {'resources': {},
                                       'traits': [odd]}}}).encode())
    body = b''.join(candidates_answer.render(found, REQUEST, (1, 34)))
    assert body == json.dumps({
        'allocation_requests': [{'allocations': {A: {'resources': {odd: 1}}},
                                 'mappings': {'_' + odd: [A]}}],
        'provider_summaries': {A: {
            'resources': {odd: {'capacity': 1, 'used': 0}},
            'traits': [odd], 'parent_provider_uuid': None,
            'root_provider_uuid': A}}}).encode()


def test_candidates_read_once_and_gone_render_as_they_are():
    """Candidates made as the answer is read (engine.Streamed) are gone
    once rendered, and the dicts and sets of the next take their ids: what
    the renderer keeps by id keeps them too, so a new dict or set is never
    taken for one rendered before."""
    uuids = {n: '%08d-0000-4000-8000-000000000000' % n for n in range(1, 41)}

    def made_as_read():
        for n in uuids:
            yield combine.Candidate(n, {n: {'VCPU': n}}, {'': {n}})

    found = types.SimpleNamespace(
        allocation_requests=made_as_read(), uuids=uuids,
        provider_summaries=_Shown(), explanation=None)
    body = b''.join(candidates_answer.render(found, REQUEST, (1, 34)))
    assert json.loads(body)['allocation_requests'] == [
        {'allocations': {uuid: {'resources': {'VCPU': n}}},
         'mappings': {'': [uuid]}} for n, uuid in uuids.items()]
