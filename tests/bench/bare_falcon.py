"""The floor of the serving stack: a falcon app answering every request
with one fixed body, served by tests/bench/steady.py under the same uwsgi
line as both services (``tests.bench.bare_falcon:application``).

Its cost per request is what uwsgi, the WSGI call and falcon's request
and response objects take, with nothing of placement's: the steady load's
goal is measured against it.
"""

import falcon

#: A provider's traits answer, as placement gives it: a body of the size
#: the steady load's answers have.
BODY = (b'{"traits": ["COMPUTE_NET_ATTACH_INTERFACE", "HW_CPU_X86_AVX2"], '
        b'"resource_provider_generation": 5}')


class _Fixed:
    def __call__(self, req, resp, **_params):
        resp.content_type = falcon.MEDIA_JSON
        resp.data = BODY


application = falcon.App()
application.add_sink(_Fixed(), prefix='/')
