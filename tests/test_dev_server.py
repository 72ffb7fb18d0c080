"""``placement-lite serve``, the development server, answers as uwsgi does."""

import http.client
import json
import os
import subprocess
import sys

from tests import harness

PLACEMENT_LITE = os.path.join(os.path.dirname(sys.executable),
                              'placement-lite')


def test_a_body_without_content_type_is_a_400(tmp_path):
    config = tmp_path / 'placement.conf'
    config.write_text('[placement_database]\nconnection = sqlite:///%s\n'
                      % (tmp_path / 'dev.sqlite'))
    port = harness._free_port()
    server = subprocess.Popen(
        [PLACEMENT_LITE, '--config-file', str(config), 'serve', '--port',
         str(port)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        text=True)
    try:
        assert 'serving on' in next(line for line in server.stdout
                                    if 'serving on' in line)
        conn = http.client.HTTPConnection('127.0.0.1', port, timeout=30)
        conn.putrequest('POST', '/resource_providers')
        conn.putheader('x-auth-token', 'admin')
        conn.putheader('content-length', '2')
        conn.endheaders(b'{}')
        response = conn.getresponse()
        body = json.loads(response.read())

        assert response.status == 400
        assert body['errors'][0]['detail'].endswith(
            'content-type header required when content-length > 0  ')
    finally:
        server.terminate()
        server.wait(30)
