"""An answer of megabytes (an unbounded candidates request) goes out in
pieces (handlers/candidates_answer.BODY_PIECE), never joined: through
uwsgi, and nginx in front as shipped, it arrives whole, with its length,
the answer an in-process request gets."""

import json
import os

import pytest

from placement_lite.handlers import candidates_answer
from tests import harness
from tests import servers
from tests.bench import builder
from tests.bench import cloud as bench_cloud

pytestmark = [pytest.mark.slow, pytest.mark.needs('postgresql', 'nginx')]

HOSTS = 300
VERSION = '1.39'
QUERY = '/allocation_candidates?resources=VCPU:1,MEMORY_MB:512'


def test_an_answer_of_megabytes_arrives_whole():
    url, _seconds = builder.new_database(
        'large_answers_%d' % os.getpid(), bench_cloud.build(HOSTS))
    environment = harness.Environment('postgresql', database_url=url)
    try:
        status, _headers, expected = environment.respond(
            'GET', QUERY, version=VERSION)
    finally:
        environment.close()
    assert status == 200
    assert len(expected) > 10 * candidates_answer.BODY_PIECE
    direct = servers.Uwsgi(url, processes=2)
    behind = servers.Uwsgi(url, section='behind-nginx', processes=2)
    front = servers.Nginx([behind.port])
    try:
        for port in (direct.port, front.port):
            status, headers, body = servers.exchange(port, 'GET', QUERY,
                                                     version=VERSION)
            assert (status, headers['content-length']) == (
                200, str(len(expected)))
            assert body == json.loads(expected)
        assert direct.problems_in_log() == behind.problems_in_log() == []
    finally:
        front.stop()
        direct.cleanup()
        behind.cleanup()
