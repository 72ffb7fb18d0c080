"""Serve the reference's WSGI application over a pipe (run by the
reference's own interpreter, never imported by the test process).

The parent writes one JSON document per line on our stdin:

- ``{"op": "call", "environ": {...}, "body": "<latin-1 text>"}``: the
  reference's application is called with that environ; the answer is
  ``{"status": ..., "headers": [[name, value], ...], "body": "<latin-1>"}``.
- ``{"op": "reset"}``: every row a world added is deleted (providers,
  consumers, custom classes and traits...), keeping the standard names
  the reference synced at start; the answer is ``{}``.
- ``"refused_leaves_no_consumer": true`` in a call: when the answer is
  an error, consumers the call created are deleted again (what a refused
  claim leaves behind in the reference; see ``runner.py``).

Answers go to the file descriptor given as the only argument, so that
whatever the reference logs (to stdout or stderr) cannot mix with them.
The reference keeps no names between requests (its caches live in each
request's context), so rows deleted behind its back leave nothing stale.
"""

import io
import json
import os
import sys

import sqlalchemy as sa

#: Tables a world writes, children first.
_WORLD_TABLES = ('allocations', 'inventories', 'resource_provider_traits',
                 'resource_provider_aggregates', 'placement_aggregates',
                 'consumers', 'projects', 'users', 'consumer_types')


def _reset(engine):
    with engine.begin() as conn:
        for table in _WORLD_TABLES:
            conn.execute(sa.text('DELETE FROM %s' % table))
        # Children before parents: a provider's parent and root are
        # foreign keys.
        while conn.execute(sa.text(
                'DELETE FROM resource_providers WHERE id NOT IN '
                '(SELECT parent_provider_id FROM resource_providers '
                ' WHERE parent_provider_id IS NOT NULL) AND id NOT IN '
                '(SELECT root_provider_id FROM resource_providers '
                ' WHERE root_provider_id IS NOT NULL AND '
                ' root_provider_id != id)')).rowcount:
            pass
        conn.execute(sa.text('DELETE FROM resource_classes '
                             'WHERE id >= 10000'))
        conn.execute(sa.text("DELETE FROM traits "
                             "WHERE name LIKE 'CUSTOM\\_%' ESCAPE '\\'"))


def _consumers(engine):
    with engine.connect() as conn:
        return set(conn.execute(sa.text('SELECT uuid FROM consumers'))
                   .scalars())


def _call(application, environ, body):
    environ = dict(environ)
    environ['wsgi.input'] = io.BytesIO(body)
    environ['wsgi.errors'] = sys.stderr
    answer = {}

    def start_response(status, headers, exc_info=None):
        answer['status'] = status
        answer['headers'] = [list(pair) for pair in headers]

    chunks = application(environ, start_response)
    try:
        answer['body'] = b''.join(chunks).decode('latin-1')
    finally:
        getattr(chunks, 'close', lambda: None)()
    return answer


def main():
    out = os.fdopen(int(sys.argv[1]), 'w')
    from placement.wsgi import api  # noqa: configured by the environment
    engine = sa.create_engine(os.environ['DIFFERENTIAL_DATABASE_URL'])
    out.write('{"ready": true}\n')
    out.flush()
    for line in sys.stdin:
        message = json.loads(line)
        if message['op'] == 'reset':
            _reset(engine)
            answer = {}
        elif message.get('refused_leaves_no_consumer'):
            before = _consumers(engine)
            answer = _call(api.application, message['environ'],
                           message['body'].encode('latin-1'))
            if int(answer['status'].split()[0]) >= 400:
                with engine.begin() as conn:
                    for uuid in _consumers(engine) - before:
                        conn.execute(sa.text(
                            'DELETE FROM consumers WHERE uuid = :uuid'),
                            {'uuid': uuid})
        else:
            answer = _call(api.application, message['environ'],
                           message['body'].encode('latin-1'))
        out.write(json.dumps(answer) + '\n')
        out.flush()


if __name__ == '__main__':
    main()
