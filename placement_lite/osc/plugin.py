"""The openstackclient plugin: ``openstack device profile ...``,
``openstack allocation candidate explain``, ``openstack allocation
candidate rank``, ``openstack allocation candidate claim`` and
``openstack placement capacity [fits]``.

It talks to the same endpoint as osc-placement (the ``placement`` service
in the catalog, or ``--os-endpoint``) and shares its
``--os-placement-api-version`` option. When no explicit version was asked
for (osc-placement's default is ``1``, "negotiate"), each command makes its
requests at the microversion it needs: 1.42 for device profiles (the first
that shows their alternatives), 1.41 for explain, 1.42 for rank, 1.43 for
claim, 1.19 for capacity.
"""

import importlib.util

from osc_lib import utils

from placement_lite.osc import http

API_NAME = 'placement_lite'
API_VERSION_OPTION = 'os_placement_api_version'
DEFAULT_API_VERSION = '1'


def make_client(instance):
    version = instance._api_version.get(API_NAME, DEFAULT_API_VERSION)
    if '.' not in version:
        version = None
    return http.Client(
        session=instance.session,
        endpoint_filter={'service_type': 'placement',
                         'region_name': instance._region_name,
                         'interface': instance.interface},
        api_version=version)


def build_option_parser(parser):
    """Add ``--os-placement-api-version`` unless osc-placement does.

    Both plugins read the same option; adding it twice would make argparse
    refuse to start.
    """
    if importlib.util.find_spec('osc_placement') is None:
        parser.add_argument(
            '--os-placement-api-version',
            metavar='<placement-api-version>',
            default=utils.env('OS_PLACEMENT_API_VERSION',
                              default=DEFAULT_API_VERSION),
            help='Placement API version, default=%s (Env: '
                 'OS_PLACEMENT_API_VERSION): each command uses the '
                 'microversion it needs' % DEFAULT_API_VERSION)
    return parser
