"""placement_lite in the place of the reference's fixture, for nova's tests.

Runs inside nova's environment (tests/nova/environment.py), imported by
tests/nova/runner.py after ``nova`` (whose import monkey-patches for
eventlet) and before any of nova's tests. :func:`install` makes
``placement.tests.functional.fixtures.placement``, the module nova's
``PlacementFixture`` extends a class of, a module of ours whose
``PlacementFixture`` is :class:`PlacementLiteFixture`; the rest of the
``placement`` package is left empty, so nothing of the reference can be
imported while nova's tests run against placement_lite.
"""

import os
import sys
import types
import uuid

import fixtures
from oslo_config import cfg
from oslo_config import fixture as config_fixture
from oslo_policy import opts as policy_opts
from wsgi_intercept import interceptor

from placement_lite import app as placement_app
from placement_lite import conf as placement_conf
from tests import harness

#: The module whose ``PlacementFixture`` nova's fixture extends.
REFERENCE_FIXTURE_MODULE = 'placement.tests.functional.fixtures.placement'

#: Requests placement_lite answered in this process, through any fixture.
requests_served = 0


class PlacementLiteFixture(fixtures.Fixture):
    """placement_lite on a fresh SQLite database, intercepted by
    wsgi-intercept at :attr:`endpoint` (``http://<uuid>/placement``).

    The constructor takes what nova passes to the reference's fixture:
    ``token`` for nova's fixture to send, a ``conf_fixture`` to configure
    (by default one of its own), ``db`` (False: use the database
    ``[placement_database] connection`` already names), ``use_intercept``
    and ``register_opts``. Subclasses adjust the configuration in
    :meth:`_configure_placement`, as nova's does.
    """

    def __init__(self, token='admin', conf_fixture=None, db=True,
                 use_intercept=True, register_opts=True):
        super().__init__()
        self.token = token
        self.conf_fixture = conf_fixture
        self.db = db
        self.use_intercept = use_intercept
        self.register_opts = register_opts
        self.endpoint = None

    def _configure_placement(self, conf_fixture):
        """For subclasses: called once placement_lite's options are
        registered, before anything reads them."""

    def setUp(self):
        super().setUp()
        if self.conf_fixture is None:
            self.conf_fixture = self.useFixture(
                config_fixture.Config(cfg.ConfigOpts()))
        if self.register_opts:
            placement_conf.register_opts(self.conf_fixture.conf)
        self._configure_placement(self.conf_fixture)
        database = self._fresh_database() if self.db else None
        # As the reference serves nova's tests: no authentication and its
        # own microversions only.
        self.conf_fixture.config(group='api', auth_strategy='noauth2',
                                 enable_extensions=False)
        # The legacy policy rules, for Placement and, as the reference's
        # fixture leaves it, for nova too: oslo.policy's defaults are
        # shared by every configuration of the process, and nova's tests
        # count on it (test_servers' over-quota resizes, whose user has
        # only the role "other", may create servers under those rules).
        policy_opts.set_defaults(self.conf_fixture.conf,
                                 enforce_new_defaults=False)
        self.conf_fixture.conf([], default_config_files=[])
        if self.use_intercept:
            self._intercept(placement_app.build_app(self.conf_fixture.conf,
                                                    db=database))

    def _fresh_database(self):
        """A copy of the harness's migrated SQLite template, named in the
        configuration and removed at clean-up."""
        database = harness.fresh_database('sqlite')
        self.conf_fixture.config(group='placement_database',
                                 connection=database.url)
        self.addCleanup(os.remove, database.engine.url.database)
        self.addCleanup(database.dispose)
        return database

    def _intercept(self, application):
        def counted(environ, start_response):
            global requests_served
            requests_served += 1
            return application(environ, start_response)

        self.endpoint = 'http://%s/placement' % uuid.uuid4()
        intercept = interceptor.RequestsInterceptor(lambda: counted,
                                                    url=self.endpoint)
        intercept.install_intercept()
        self.addCleanup(intercept.uninstall_intercept)


def install():
    """Put :class:`PlacementLiteFixture` where nova's fixture looks for the
    reference's, in a ``placement`` package of empty modules."""
    for name in ('placement', 'nova.tests.functional.fixtures'):
        if name in sys.modules:
            raise RuntimeError('%s was imported before the fixture was '
                               'swapped' % name)
    names = REFERENCE_FIXTURE_MODULE.split('.')
    parent = None
    for depth, name in enumerate(names, 1):
        module = types.ModuleType('.'.join(names[:depth]))
        if depth < len(names):
            module.__path__ = []
        sys.modules[module.__name__] = module
        if parent is not None:
            setattr(parent, name, module)
        parent = module
    parent.PlacementFixture = PlacementLiteFixture
