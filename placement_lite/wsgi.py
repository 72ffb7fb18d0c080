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
# the collector's sight keeps full collections, which large candidate
# responses trigger, from walking it again and again.
gc.freeze()
