"""``openstack allocation candidate claim``: allocate the best candidate
of a candidates query to consumers in one request (microversion 1.43,
api-ref/extensions.md)."""

import urllib.parse

from osc_lib.command import command

from placement_lite import microversion
from placement_lite.osc import allocation_candidates
from placement_lite.osc import ranked_candidates

MICROVERSION = str(microversion.CLAIMS)
COLUMNS = ('Consumer', 'Allocations', 'Mappings', 'Generation')


def body(parsed_args):
    """The request body: each consumer named, owned alike."""
    owner = {'project_id': parsed_args.project, 'user_id': parsed_args.user,
             'consumer_generation': parsed_args.consumer_generation,
             'consumer_type': parsed_args.consumer_type}
    claim = {'consumers': {consumer: owner
                           for consumer in parsed_args.consumers}}
    if parsed_args.distinct_trees:
        claim['trees'] = 'distinct'
    elif parsed_args.same_aggregate:
        claim['trees'] = 'same_aggregate'
    return claim


def rows(answer):
    """A row per consumer, in the answer's order."""
    for consumer, claimed in answer['claims'].items():
        yield (consumer, ranked_candidates.allocations_text(claimed),
               '; '.join('%s: %s' % (suffix or '(unsuffixed)',
                                     ', '.join(providers))
                         for suffix, providers
                         in claimed['mappings'].items()),
               claimed['consumer_generation'])


class ClaimAllocationCandidate(command.Lister):
    """Allocate the best allocation candidate to consumers.

    Requires ``--os-placement-api-version 1.43`` (the default; 1.44
    with ``--can-split``).
    """

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        ranked_candidates.add_query_arguments(
            parser, 'resources=VCPU:2,MEMORY_MB:1024, root_required=!TRAIT',
            'Claim the best by the free capacity of a class after the '
            'candidate: spread (most free) or pack (least free); repeat to '
            'break ties (default: spread on the classes asked for, unless '
            'the server sets a key)',
            'How many of the best candidates each search tries')
        parser.add_argument(
            '--consumer', metavar='<uuid>', dest='consumers',
            action='append', required=True,
            help='A consumer to claim for; repeat for a batch (all or '
                 'none)')
        parser.add_argument('--project', metavar='<project_id>',
                            required=True, help="The consumers' project")
        parser.add_argument('--user', metavar='<user_id>', required=True,
                            help="The consumers' user")
        parser.add_argument(
            '--consumer-type', metavar='<type>', default='INSTANCE',
            help="The consumers' type (default INSTANCE)")
        parser.add_argument(
            '--consumer-generation', metavar='<n>', type=int,
            help='The generation of an existing consumer (none: a new '
                 'consumer)')
        trees = parser.add_mutually_exclusive_group()
        trees.add_argument(
            '--distinct-trees', action='store_true',
            help='Each consumer of a batch in a tree (host) of its own')
        trees.add_argument(
            '--same-aggregate', action='store_true',
            help='Every consumer of a batch in the trees (hosts) of one '
                 'aggregate; they may share a tree')
        return parser

    def take_action(self, parsed_args):
        http = self.app.client_manager.placement_lite
        pairs = ranked_candidates.base_query(parsed_args)
        answer = http.request(
            'POST', '/allocation_claims?' + urllib.parse.urlencode(pairs),
            allocation_candidates.version_for(pairs, MICROVERSION),
            json=body(parsed_args)).json()
        return COLUMNS, list(rows(answer))
