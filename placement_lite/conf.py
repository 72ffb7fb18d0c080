"""Configuration options.

Option names and groups are those of the reference Placement service wherever
the meaning is the same, so that an existing ``placement.conf`` keeps working.
Options the reference has but placement_lite does not use (MySQL tuning, for
example) are simply ignored when found in a file, as oslo.config does for any
unregistered option.
"""

import os

from keystonemiddleware import auth_token
from oslo_config import cfg
from oslo_log import log as oslo_log
from oslo_middleware import cors
from oslo_middleware import http_proxy_to_wsgi
from oslo_middleware import opts as middleware_opts
from oslo_policy import opts as policy_opts

from placement_lite import microversion

#: The largest request body accepted by default (1 MiB): a thousand
#: consumers in one POST /allocations take about 300 KiB.
DEFAULT_MAX_BODY_SIZE = 1024 * 1024

api_opts = [
    cfg.StrOpt(
        'auth_strategy', default='keystone',
        choices=[('keystone', 'Use the keystone auth_token middleware'),
                 ('noauth2', 'Development only: the token names the user; '
                             '"admin" is an administrator')],
        help='How requests are authenticated.'),
    cfg.BoolOpt(
        'enable_extensions', default=True,
        help='Serve placement_lite extensions (device profiles, '
             'microversion %s; explain and more nested features for '
             'allocation candidates, %s). When false, the service '
             'advertises and behaves exactly as the reference: maximum '
             'microversion %s.'
             % (microversion.DEVICE_PROFILES, microversion.EXPLAIN,
                microversion.REFERENCE_MAXIMUM)),
    cfg.FloatOpt(
        'log_slow_candidates_after', default=1.0, min=0,
        help='Seconds after which an allocation candidates request is '
             'logged at WARNING with its query (0: never).'),
    cfg.IntOpt(
        'max_request_body_size', default=DEFAULT_MAX_BODY_SIZE, min=1,
        help='Largest request body, in bytes, the service reads; a larger '
             'one is answered 413 without being parsed. A proxy in front '
             '(nginx client_max_body_size) should allow somewhat more, so '
             'that the answer is in Placement\'s error format.'),
    cfg.FloatOpt(
        'drain_grace_period', default=5.0, min=0,
        help='placement_lite under uwsgi: seconds a worker told to stop '
             '(SIGTERM to uwsgi) goes on taking requests while '
             '/healthcheck answers 503, so that load balancers\' checks '
             'and orchestrators\' readiness probes take the host out '
             'first. Then it refuses new connections (a proxy sends them '
             'to another host), answers every one it accepted and exits '
             '(docs/deploying.md).'),
    cfg.FloatOpt(
        'drain_timeout', default=30.0, min=0,
        help='placement_lite under uwsgi: the longest a stopping worker '
             'waits, after drain_grace_period, for every request its host '
             'accepted to be answered; then it exits all the same.'),
]

database_opts = [
    cfg.StrOpt(
        'connection', secret=True,
        help='SQLAlchemy URL of the database. When unset, an SQLite file '
             'under the user data directory is used.'),
    cfg.StrOpt(
        'connection_parameters', default='',
        help='Query parameters added to the connection URLs, as '
             'param1=value1&param2=value2 (for example '
             'connect_timeout=5 for PostgreSQL).'),
    cfg.StrOpt(
        'slave_connection', secret=True,
        help='SQLAlchemy URL of a read-only streaming replica of the '
             'database (PostgreSQL). When set, allocation candidates, the '
             'provider listing and project usages are read from it; every '
             'write, and every check a write makes, still goes to the '
             'primary, so a replica that lags can make a claim fail with '
             '409 but never over-commit a provider.'),
    cfg.BoolOpt(
        'sync_on_startup', default=False,
        help='Upgrade the database schema to the newest revision when the '
             'service starts.'),
    cfg.IntOpt(
        'max_retries', default=10, min=-1,
        help='Times the service tries again to reach an unavailable '
             'database when it starts (-1: until it answers). Once '
             'started, a request that finds the database away is answered '
             '503 and the next one reconnects.'),
    cfg.IntOpt(
        'retry_interval', default=10, min=0,
        help='Seconds between those tries.'),
    cfg.IntOpt(
        'max_pool_size', min=1,
        help='Connections kept open per process (PostgreSQL).'),
    cfg.IntOpt(
        'max_overflow', min=0,
        help='Extra connections allowed above max_pool_size (PostgreSQL).'),
    cfg.IntOpt(
        'pool_timeout', min=1,
        help='Seconds to wait for a pooled connection.'),
    cfg.IntOpt(
        'connection_recycle_time', default=3600,
        help='Seconds after which a pooled connection is replaced.'),
    cfg.IntOpt(
        'connection_debug', default=0, min=0, max=100,
        help='Log SQL statements when 50 or more.'),
]

placement_opts = [
    cfg.BoolOpt(
        'randomize_allocation_candidates', default=False,
        help='Shuffle allocation candidates before applying limit, so that '
             'schedulers sharing a cloud do not all pick the same hosts.'),
    cfg.StrOpt(
        'incomplete_consumer_project_id',
        default='00000000-0000-0000-0000-000000000000',
        help='Project recorded for consumers created before microversion '
             '1.8, when project_id was not yet required.'),
    cfg.StrOpt(
        'incomplete_consumer_user_id',
        default='00000000-0000-0000-0000-000000000000',
        help='User recorded for consumers created before microversion 1.8.'),
    cfg.IntOpt(
        'allocation_conflict_retry_count', default=10, min=0,
        help='How many times a write is retried, each in a new '
             'transaction, when it meets a concurrent one: another writer '
             'changed a provider generation, a deadlock, a Galera '
             'certification conflict, a serialization failure, a lock wait '
             'timeout. Then an allocation write is answered 409, any other '
             'write 503; neither changed anything.'),
    cfg.IntOpt(
        'max_allocation_candidates', default=-1,
        help='Upper bound on the allocation candidates generated for one '
             'request; -1 means no bound beyond the request limit.'),
    cfg.StrOpt(
        'allocation_candidates_generation_strategy', default='depth-first',
        choices=[('depth-first', 'Exhaust each tree before the next one'),
                 ('breadth-first', 'Take candidates from every tree in '
                                   'turn')],
        help='Order in which candidates are generated across provider trees '
             'when max_allocation_candidates bounds the result.'),
    cfg.StrOpt(
        'allocation_candidates_rank_by',
        help='placement_lite: rank every bounded GET /allocation_candidates '
             'that ranks nothing itself by this key, at every microversion, '
             'in the syntax of the rank_by parameter of microversion 1.42: '
             'spread:MEMORY_MB,VCPU gives the hosts with the most memory '
             'free (then VCPU) first, pack:MEMORY_MB the fullest that fit. '
             'A bounded answer then holds the best candidates of the whole '
             'cloud, not the first ones found; randomize_allocation_'
             'candidates and allocation_candidates_generation_strategy no '
             'longer apply to it. A class that does not exist is left out. '
             'Claims (POST /allocation_claims, 1.43) without a rank_by of '
             'their own take the best candidate by it too. '
             'Unset (the default): the reference\'s order (claims: spread '
             'on the classes they ask for).'),
    cfg.IntOpt(
        'allocation_candidates_dispersion', default=0, min=0,
        help='placement_lite: with allocation_candidates_rank_by, a '
             'bounded answer leaves out every candidate of its n best '
             'trees, n from 0 to this number, a different n for each '
             'request of the same shape (in turn, from a point picked at '
             'random per process), so that schedulers asking the same '
             'together weigh different hosts best: each answer starts with '
             'the best candidate of one of the best N+1 trees. 0: the exact '
             'order.'),
    cfg.IntOpt(
        'allocation_candidates_dispersion_seed', min=0,
        help='placement_lite: start the numbers of '
             'allocation_candidates_dispersion from this seed instead of a '
             'random point (for tests).'),
    cfg.BoolOpt(
        'warm_caches_on_start', default=True,
        help='placement_lite: read every provider into what a process keeps '
             'for allocation candidates while the application is built, '
             'before it serves: under a server that forks its workers '
             'afterwards they share what was read, otherwise each worker '
             'reads it before it takes a request. Off, the first request '
             'that searches the whole cloud reads it (seconds at tens of '
             'thousands of hosts).'),
]

workarounds_opts = [
    cfg.BoolOpt(
        'optimize_for_wide_provider_trees', default=False,
        help='Accepted for compatibility. placement_lite never needs it: '
             'its engine is bounded by the limit whatever the tree shape.'),
]

metrics_opts = [
    cfg.BoolOpt(
        'enabled', default=False,
        help='placement_lite: count requests, candidates, claims, database '
             'statements and cache use, and serve them at /metrics in '
             'Prometheus text format, before authentication, to the '
             'addresses of allowed_networks only (docs/operations.md). Off, '
             '/metrics is an unknown path, as in the reference.'),
    cfg.ListOpt(
        'allowed_networks', default=['127.0.0.0/8', '::1/128'],
        help='placement_lite: the networks (CIDR) whose addresses may read '
             '/metrics; any other address is answered 403. Behind nginx, '
             'the address is the client\'s (nginx passes it on).'),
    cfg.StrOpt(
        'multiprocess_dir',
        help='placement_lite: the directory where each process of a server '
             'with several worker processes (uwsgi) writes its counts, so '
             'that every scrape adds up all of them (prometheus_client\'s '
             'multiprocess mode; the environment variable '
             'PROMETHEUS_MULTIPROC_DIR does the same and wins). Emptied when '
             'a new uwsgi master starts. Unset: each process counts alone, '
             'right for one process (placement-lite serve).'),
]

GROUPS = (
    ('api', api_opts),
    ('placement_database', database_opts),
    ('placement', placement_opts),
    ('workarounds', workarounds_opts),
    ('metrics', metrics_opts),
)


#: CORS defaults: the headers and methods Placement clients use.
CORS_DEFAULTS = {
    'allow_headers': ['X-Auth-Token', 'X-Openstack-Request-Id',
                      'X-Identity-Status', 'X-Roles', 'X-Service-Catalog',
                      'X-User-Id', 'X-Tenant-Id', 'OpenStack-API-Version'],
    'expose_headers': ['X-Auth-Token', 'X-Openstack-Request-Id',
                       'X-Subject-Token', 'X-Service-Token',
                       'OpenStack-API-Version'],
    'allow_methods': ['GET', 'PUT', 'POST', 'DELETE', 'PATCH'],
}


#: keystonemiddleware waits for keystone without a bound by default: a
#: keystone that accepts connections and never answers would hold a worker
#: per request. These bound it to about 10 s (two tries of 5 s).
KEYSTONE_DEFAULTS = {
    'http_connect_timeout': 5,
    'http_request_max_retries': 1,
}


def register_opts(conf):
    cors.set_defaults(**CORS_DEFAULTS)
    for group, opts in GROUPS:
        conf.register_opts(opts, group=group)
    policy_opts.set_defaults(conf, policy_file='policy.yaml')
    conf.register_opts(cors.CORS_OPTS, 'cors')
    conf.register_opts(http_proxy_to_wsgi.OPTS, 'oslo_middleware')
    for group, opts in middleware_opts.list_opts_healthcheck():
        conf.register_opts(opts, group=group)
    for group, opts in auth_token.list_opts():
        conf.register_opts(opts, group=group)
    for name, value in KEYSTONE_DEFAULTS.items():
        conf.set_default(name, value, group='keystone_authtoken')
    oslo_log.register_options(conf)


def list_opts():
    """Options for oslo-config-generator (see etc/placement-config-generator.conf)."""
    cors.set_defaults(**CORS_DEFAULTS)
    return [(group, opts) for group, opts in GROUPS] + [('cors', cors.CORS_OPTS)]


def load(argv=None, default_config_files=None):
    """Build a ConfigOpts from the command line and placement.conf.

    The file is found as the reference finds it: with
    ``$OS_PLACEMENT_CONFIG_DIR`` set, ``placement.conf`` in that directory,
    which must exist (``cfg.ConfigFilesNotFoundError`` otherwise: a typo
    must not start a service on an empty database); without it, oslo.config's
    usual places (``~/.placement/``, ``~/``, ``/etc/placement/``, ``/etc/``).
    ``--config-file`` overrides both.
    """
    conf = cfg.ConfigOpts()
    register_opts(conf)
    if default_config_files is None:
        default_config_files = config_files(os.environ)
    conf(argv or [], project='placement',
         default_config_files=default_config_files)
    return conf


def config_files(environ):
    """The files named by ``environ``, or None for oslo.config's search."""
    config_dir = environ.get('OS_PLACEMENT_CONFIG_DIR', '').strip()
    if config_dir:
        return [os.path.join(config_dir, 'placement.conf')]
    return None
