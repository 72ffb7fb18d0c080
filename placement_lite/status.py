"""``placement-lite status``: what an operator checks after an upgrade,
before starting the new service (as the reference's ``placement-status
upgrade check``). oslo.upgradecheck runs the checks, prints the table and
gives the exit code: 0 all passed, 1 a warning, 2 a failure.
"""

from oslo_upgradecheck import common_checks
from oslo_upgradecheck import upgradecheck

from placement_lite.db import health
from placement_lite.db import migrate
from placement_lite.domain import standard_names

SUCCESS = upgradecheck.Result(upgradecheck.Code.SUCCESS)
#: What the checks that read tables say while the schema is older than
#: this release's (the tables they read may not exist yet); the schema
#: check fails.
NOT_CHECKED = upgradecheck.Result(
    upgradecheck.Code.WARNING,
    'Not checked: the database schema is not current.')


def _needs_schema(check):
    """``check``, run only on a schema that serves this release: current,
    or newer (a newer release's migrations keep every table this release
    reads)."""
    def checked(self):
        if not (self.schema_current or self.schema_newer):
            return NOT_CHECKED
        return check(self)
    return checked


class Checks(upgradecheck.UpgradeCommands):

    def __init__(self, conf, db):
        self.conf = conf
        self.db = db
        self.current_revision = migrate.current_revision(db)
        self.schema_current = self.current_revision == migrate.head_revision()
        self.schema_newer = migrate.is_newer(self.current_revision)

    def _schema(self):
        if self.schema_current:
            return SUCCESS
        if self.schema_newer:
            return upgradecheck.Result(
                upgradecheck.Code.WARNING,
                'The database is at revision %s, which a newer release '
                'recorded (this release knows up to %s). This release '
                'serves on it as it is when it is the release before the one '
                'that migrated it (a rollback).' % (self.current_revision,
                                    migrate.head_revision()))
        found = ('has no placement_lite schema' if self.current_revision is None
                 else 'is at revision %s' % self.current_revision)
        return upgradecheck.Result(
            upgradecheck.Code.FAILURE,
            'The database %s, not %s. Run "placement-lite db sync".'
            % (found, migrate.head_revision()))

    @_needs_schema
    def _standard_names(self):
        """Names missing are no problem (the service adds them when it
        starts, as the reference does), but worth saying."""
        classes, traits = standard_names.missing(self.db)
        if not classes and not traits:
            return SUCCESS
        return upgradecheck.Result(
            upgradecheck.Code.SUCCESS,
            '%d standard resource classes and %d standard traits are not in '
            'the database yet; the service adds them when it starts.'
            % (len(classes), len(traits)))

    def _rows(self, count_rows, code, message):
        """SUCCESS when ``count_rows`` counts none, else ``code`` with
        ``message`` % the count."""
        with self.db.reader() as conn:
            count = count_rows(conn)
        if not count:
            return SUCCESS
        return upgradecheck.Result(code, message % count)

    @_needs_schema
    def _root_providers(self):
        return self._rows(
            health.providers_without_root, upgradecheck.Code.FAILURE,
            '%d resource providers have no root provider id. Run the '
            'reference\'s "placement-manage db online_data_migrations" '
            'before switching.')

    @_needs_schema
    def _incomplete_consumers(self):
        return self._rows(
            health.consumers_missing_for_allocations,
            upgradecheck.Code.WARNING,
            '%d consumers hold allocations but have no consumer record '
            '(no project, user or generation). Run the reference\'s '
            '"placement-manage db online_data_migrations" to create them.')

    @_needs_schema
    def _empty_consumers(self):
        return self._rows(
            health.consumers_without_allocations, upgradecheck.Code.WARNING,
            '%d consumers hold no allocation; the API removes a consumer '
            'with its last allocation, so something else left them.')

    def _policy_file(self):
        return common_checks.check_policy_json(self, self.conf)

    _upgrade_checks = (
        ('Database schema', _schema),
        ('Standard resource classes and traits', _standard_names),
        ('Missing Root Provider IDs', _root_providers),
        ('Incomplete Consumers', _incomplete_consumers),
        ('Consumers without allocations', _empty_consumers),
        ('Policy File JSON to YAML Migration', _policy_file),
    )
