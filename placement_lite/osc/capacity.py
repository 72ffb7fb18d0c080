"""``openstack placement capacity`` and ``openstack placement capacity
fits``: ``placement-lite capacity`` (and its ``--fits``) through the API,
for an operator without access to the database.

It reads every provider (``GET /resource_providers``), then each one's
inventories and usages (and aggregates or traits when grouped by them):
two requests per provider or more, so seconds at thousands of providers;
``placement-lite capacity`` reads the database in a few statements.
"""

from osc_lib.command import command
from osc_lib import exceptions

from placement_lite.db import capacity as capacity_db
from placement_lite.domain import capacity

#: The microversion of the provider listing with roots (1.14), of
#: aggregates with their generation (1.19).
MICROVERSION = '1.19'
COLUMNS = ('Resource class', 'Total', 'Reserved', 'Capacity', 'Used',
           'Free', 'Used %')


def provider_rows(client, by=None):
    """Rows in the shape of db.capacity.ProviderRows, read through the
    API with ``client`` (placement_lite.osc.http.Client)."""
    def get(url):
        return client.request('GET', url, MICROVERSION).json()

    providers, inventories, usages, aggregates, traits = [], [], [], [], []
    listed = get('/resource_providers')['resource_providers']
    for index, provider in enumerate(listed):
        uuid = provider['uuid']
        providers.append((index, uuid, provider['name'],
                          provider['root_provider_uuid']))
        for name, held in get('/resource_providers/%s/inventories'
                              % uuid)['inventories'].items():
            inventories.append((
                index, name, held['total'], held['reserved'],
                held['allocation_ratio'], held['min_unit'],
                held['max_unit'], held['step_size']))
        usages.extend((index, name, used) for name, used in get(
            '/resource_providers/%s/usages' % uuid)['usages'].items())
        if by == capacity.BY_AGGREGATE:
            aggregates.extend((index, aggregate) for aggregate in get(
                '/resource_providers/%s/aggregates' % uuid)['aggregates'])
        elif by == capacity.BY_TRAIT:
            traits.extend((index, trait) for trait in get(
                '/resource_providers/%s/traits' % uuid)['traits'])
    return capacity_db.ProviderRows(providers, inventories, usages,
                                    aggregates, traits)


class ShowCapacity(command.Lister):
    """Capacity and usage per resource class (and aggregate or trait)."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument(
            '--by', choices=capacity.GROUPINGS,
            help='a row per aggregate or per trait of the providers, and '
                 'class')
        return parser

    def take_action(self, parsed_args):
        by = parsed_args.by
        rows = capacity.report(capacity.from_rows(provider_rows(
            self.app.client_manager.placement_lite, by)), by)
        return ((by.capitalize(),) if by else ()) + COLUMNS, [
            ((row.group,) if by else ()) + (
                row.resource_class, row.total, row.reserved, row.capacity,
                row.used, row.free, round(row.used_percent, 1))
            for row in rows]


class FitsCapacity(command.ShowOne):
    """How many more of a flavor the cloud takes, as allocation candidates
    would place them (``placement-lite capacity --fits``)."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument(
            'resources', metavar='resources=CLASS:AMOUNT,...',
            help='the flavor, for example resources=VCPU:4,MEMORY_MB:8192')
        return parser

    def take_action(self, parsed_args):
        try:
            resources = capacity.parse_resources(parsed_args.resources)
        except ValueError as exc:
            raise exceptions.CommandError(str(exc))
        providers = capacity.from_rows(provider_rows(
            self.app.client_manager.placement_lite))
        return ('Flavor', 'Fits'), (
            ','.join('%s:%d' % item for item in resources.items()),
            capacity.fits(providers, resources))
