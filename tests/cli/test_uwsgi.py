"""The uwsgi line the README gives operators keeps connections alive."""

import http.client
import json
import urllib.parse


def test_two_requests_on_one_connection(server):
    """The openstack CLI reuses connections: the second request must work."""
    parsed = urllib.parse.urlparse(server.url)
    conn = http.client.HTTPConnection(parsed.hostname, parsed.port, timeout=10)
    try:
        statuses = []
        for _ in range(2):
            conn.request('GET', '/', headers={'Connection': 'keep-alive'})
            response = conn.getresponse()
            body = json.loads(response.read())
            statuses.append((response.status,
                             body['versions'][0]['max_version']))
    finally:
        conn.close()
    assert statuses == [(200, '1.44'), (200, '1.44')]
