"""The ``placement-lite`` command: development server, database tools and
the capacity report."""

import argparse
import http
import json
import logging
import socketserver
import sys
from wsgiref import simple_server

from oslo_config import cfg
import prettytable
import sqlalchemy as sa

from placement_lite import app
from placement_lite import conf as config
from placement_lite import galera_check
from placement_lite import requestlog
from placement_lite import status
from placement_lite.db import api as db_api
from placement_lite.db import migrate
from placement_lite.domain import capacity


class _ThreadingWSGIServer(socketserver.ThreadingMixIn,
                           simple_server.WSGIServer):
    daemon_threads = True


class _QuietHandler(simple_server.WSGIRequestHandler):
    def log_message(self, format, *args):
        """Nothing: the application logs each request (requestlog)."""

    def send_error(self, code, message=None, explain=None):
        """The server's own refusals (a request line over 64 KB: 414;
        more than 100 headers, or a header line over 64 KB: 431; a
        malformed request: 400) in Placement's error format."""
        status = http.HTTPStatus(code)
        body = json.dumps({'errors': [{
            'status': code, 'title': status.phrase,
            'detail': message or status.description}]}).encode()
        self.send_response(code)
        self.send_header('Connection', 'close')
        self.send_header('Content-Type', 'application/json')
        self.send_header('Content-Length', str(len(body)))
        self.end_headers()
        if self.command != 'HEAD':
            self.wfile.write(body)

    def get_environ(self):
        """The request as uwsgi presents it: wsgiref says ``text/plain``
        for a request that names no content type, which would turn the
        400 a body without one gets into a 415."""
        environ = super().get_environ()
        if self.headers.get('content-type') is None:
            environ.pop('CONTENT_TYPE', None)
        return environ


class _CommandError(Exception):
    """A mistake the operator can fix, said in one line."""


def _load(args):
    return config.load(
        argv=['--config-file', args.config_file] if args.config_file else [])


def _database(conf):
    """The configured database; a _CommandError naming the option when its
    URL cannot be used."""
    try:
        return db_api.from_conf(conf)
    except (sa.exc.ArgumentError, sa.exc.NoSuchModuleError,
            ImportError) as exc:
        raise _CommandError('[placement_database] connection cannot be '
                            'used: %s' % exc)


def serve(args):
    conf = _load(args)
    # A development server with no placement.conf is usable at once:
    # no keystone, and the schema created. A config file still decides.
    conf.set_default('auth_strategy', 'noauth2', group='api')
    requestlog.setup(conf)
    db = _database(conf)
    _reachable(db, migrate.upgrade)
    application = app.build_app(conf, db=db)
    print('placement-lite: database %s' % _describe(db), flush=True)
    print('placement-lite: auth strategy %s' % conf.api.auth_strategy,
          flush=True)
    server = simple_server.make_server(
        args.host, args.port, application,
        server_class=_ThreadingWSGIServer, handler_class=_QuietHandler)
    # Announced once the socket listens, so whoever waits for it can connect.
    print('placement-lite: serving on http://%s:%d/' % (args.host, args.port),
          flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


def _describe(db):
    url = db.engine.url
    if url.get_backend_name() == 'sqlite':
        return url.database
    return url.render_as_string(hide_password=True)


def _reachable(db, work):
    """``work(db)``; a _CommandError naming the option and the database
    when the database cannot be reached (down, wrong host or password)."""
    try:
        return work(db)
    except sa.exc.OperationalError as exc:
        reason = str(exc.orig).strip().splitlines()[0]
        raise _CommandError(
            'cannot reach the database of [placement_database] connection '
            '(%s): %s' % (_describe(db), reason))


def db_sync(args):
    """Upgrade the schema and print the revision the database is at.

    A database a newer release migrated is left as it is, and that is no
    error (exit 0): this release serves on it (docs/databases.md, expand
    and contract), so a rollback that runs ``db sync`` goes on. The
    warning saying so goes to standard error, the revision to standard
    output as always."""
    logging.basicConfig(format='placement-lite: %(message)s',
                        stream=sys.stderr)
    db = _database(_load(args))
    try:
        print(_reachable(db, migrate.upgrade))
    except migrate.TablesBusy as exc:
        raise _CommandError('%s; nothing was changed: run it again when '
                            'fewer requests are served' % exc)


def db_version(args):
    print(_reachable(_database(_load(args)), migrate.current_revision))


def upgrade_status(args):
    """Exit with oslo.upgradecheck's code: 0 ready, 1 warning, 2 failure."""
    conf = _load(args)
    db = _database(conf)
    sys.exit(_reachable(db, lambda db: status.Checks(conf, db).check()))


def check_galera_node(args):
    """Serve HAProxy's health check of one Galera node (galera_check.py)."""
    print('placement-lite: galera-check of %s on http://%s:%d/'
          % (sa.engine.make_url(args.node).render_as_string(
              hide_password=True), args.host, args.port), flush=True)
    galera_check.serve(args.node, args.host, args.port, args.timeout)


def capacity_report(args):
    """The capacity table, how many more of a flavor fit, the chart."""
    resources = _flavor(args.fits) if args.fits else None
    db = _database(_load(args))
    providers = _reachable(db, lambda db: capacity.read(db, args.by))
    rows = capacity.report(providers, args.by)
    print(capacity_table(rows, args.by))
    if resources:
        print(fits_line(resources, capacity.fits(providers, resources)))
    if args.chart:
        _draw(args.chart, rows, args.by)


def _flavor(text):
    try:
        return capacity.parse_resources(text)
    except ValueError as exc:
        raise _CommandError('--fits: %s' % exc)


def capacity_table(rows, by=None):
    """The report as a text table (``by``: the grouping, or None)."""
    table = prettytable.PrettyTable(
        ([by.capitalize()] if by else []) + list(CAPACITY_COLUMNS))
    table.align = 'r'
    table.align['Resource class'] = 'l'
    for row in rows:
        table.add_row(([row.group] if by else []) + [
            row.resource_class, row.total, row.reserved, row.capacity,
            row.used, row.free, '%.1f' % row.used_percent])
    return table.get_string()


CAPACITY_COLUMNS = ('Resource class', 'Total', 'Reserved', 'Capacity',
                    'Used', 'Free', 'Used %')


def fits_line(resources, count):
    return '%d more of %s fit' % (count, ','.join(
        '%s:%d' % item for item in resources.items()))


def _draw(path, rows, by):
    try:
        from placement_lite import charts
    except ImportError as exc:
        raise _CommandError(
            '--chart needs matplotlib (pip install '
            "'placement-lite[charts]'): %s" % exc)
    charts.capacity(path, rows, by)
    print('chart written to %s' % path)


def main(argv=None):
    parser = argparse.ArgumentParser(prog='placement-lite')
    parser.add_argument('--config-file',
                        help='placement.conf to read (default: '
                             '$OS_PLACEMENT_CONFIG_DIR/placement.conf, or '
                             "the reference's places when that is unset)")
    commands = parser.add_subparsers(dest='command', required=True)
    serve_parser = commands.add_parser('serve', help='run a development server')
    serve_parser.add_argument('--config-file', default=argparse.SUPPRESS)
    serve_parser.add_argument('--host', default='127.0.0.1')
    serve_parser.add_argument('--port', type=int, default=8778)
    serve_parser.set_defaults(func=serve)
    db_parser = commands.add_parser('db', help='database schema')
    db_commands = db_parser.add_subparsers(dest='db_command', required=True)
    sync_parser = db_commands.add_parser('sync', help='upgrade to the newest schema')
    sync_parser.add_argument('--config-file', default=argparse.SUPPRESS)
    sync_parser.set_defaults(func=db_sync)
    version_parser = db_commands.add_parser('version', help='print the schema revision')
    version_parser.add_argument('--config-file', default=argparse.SUPPRESS)
    version_parser.set_defaults(func=db_version)
    status_parser = commands.add_parser(
        'status', help='check the database and policy file after an upgrade')
    status_parser.add_argument('--config-file', default=argparse.SUPPRESS)
    status_parser.set_defaults(func=upgrade_status)
    check_parser = commands.add_parser(
        'galera-check', help="serve HAProxy's health check of a MariaDB "
                             'Galera node: 200 when it is Synced, else 503')
    check_parser.add_argument(
        '--node', required=True,
        help='the node, as an SQLAlchemy URL (mysql+pymysql://user:pass@'
             'host:3306/); any user may check')
    check_parser.add_argument('--host', default='127.0.0.1')
    check_parser.add_argument('--port', type=int, default=9200)
    check_parser.add_argument('--timeout', type=float, default=2.0,
                              help='seconds to wait for the node')
    check_parser.set_defaults(func=check_galera_node)
    capacity_parser = commands.add_parser(
        'capacity', help='capacity and usage per resource class; how many '
                         'more of a flavor fit')
    capacity_parser.add_argument('--config-file', default=argparse.SUPPRESS)
    capacity_parser.add_argument(
        '--by', choices=capacity.GROUPINGS,
        help='a table per aggregate or per trait of the providers')
    capacity_parser.add_argument(
        '--fits', metavar='resources=CLASS:AMOUNT,...',
        help='how many more of this flavor the cloud takes, as allocation '
             'candidates would place them (for example '
             'resources=VCPU:4,MEMORY_MB:8192)')
    capacity_parser.add_argument(
        '--chart', metavar='FILE',
        help='also draw the share used of each class as a bar chart (PNG, '
             'SVG or PDF by the name; needs matplotlib)')
    capacity_parser.set_defaults(func=capacity_report)
    args = parser.parse_args(argv)
    try:
        args.func(args)
    except (cfg.Error, _CommandError) as exc:
        # A missing or unreadable placement.conf, a bad value, a database
        # that cannot be used or reached: one line, no traceback.
        parser.exit(1, 'placement-lite: error: %s\n' % exc)


if __name__ == '__main__':
    main()
