"""WSGI entry point for uwsgi and other servers: ``placement_lite.wsgi:application``.

Configuration comes from ``$OS_PLACEMENT_CONFIG_DIR/placement.conf``, as for
the reference service.
"""

import gc
import logging

from placement_lite import app
from placement_lite import conf as config

logging.basicConfig(level=logging.INFO)

application = app.build_app(config.load())
# What was built at start-up lives as long as the process: moving it out of
# the collector's sight keeps full collections from walking it again and
# again.
gc.freeze()
# A large candidates answer builds a few hundred thousand small containers,
# nearly all alive until the response is written, and nearly none in a
# reference cycle. With the default thresholds (700, 10, 10) the collector
# walks them over and over while the request runs, about a fifth of its
# time; collecting every 100,000 allocations finds the same garbage.
gc.set_threshold(100_000, 20, 20)
