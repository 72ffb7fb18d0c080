"""Gabbi fixtures for the project's own gabbits (``fixtures:`` in YAML).

Each gabbi file describes its environment through the API itself; the
fixtures here only provide what YAML cannot: a fresh database (every file
gets one anyway) and configuration switched for the whole file.
"""

from gabbi import fixture

from tests import harness


class APIFixture(fixture.GabbiFixture):
    """A fresh, empty service with the default configuration."""

    def start_fixture(self):
        harness.session().environment()

    def stop_fixture(self):
        pass


class ReferenceOnlyFixture(fixture.GabbiFixture):
    """Extensions switched off: the service behaves exactly as the reference."""

    def start_fixture(self):
        harness.session().conf_overrides['api.enable_extensions'] = False

    def stop_fixture(self):
        pass


class CORSFixture(fixture.GabbiFixture):
    """CORS switched on for one allowed origin."""

    def start_fixture(self):
        harness.session().conf_overrides['cors.allowed_origin'] = (
            'http://allowed.example.com')

    def stop_fixture(self):
        pass


class ServerOrderFixture(fixture.GabbiFixture):
    """Bounded candidates requests ranked by the operator's key:
    ``[placement] allocation_candidates_rank_by = spread:MEMORY_MB,VCPU``."""

    def start_fixture(self):
        harness.session().conf_overrides[
            'placement.allocation_candidates_rank_by'] = (
                'spread:MEMORY_MB,VCPU')

    def stop_fixture(self):
        pass
