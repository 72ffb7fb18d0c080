"""``openstack allocation candidate rank``: ranked allocation candidates,
each with its rank key (microversion 1.42, api-ref/extensions.md)."""

import urllib.parse

from osc_lib.command import command

from placement_lite import microversion
from placement_lite.osc import allocation_candidates

MICROVERSION = str(microversion.RANKED)
COLUMNS = ('Rank', 'Tree', 'Alternatives', 'Preferred', 'Round', 'Free',
           'Allocations', 'Skipped')


def query(parsed_args):
    """The query pairs of the command's arguments."""
    pairs = base_query(parsed_args)
    if parsed_args.preferred:
        pairs.append(('preferred', ','.join(parsed_args.preferred)))
    if parsed_args.root_preferred:
        pairs.append(('root_preferred',
                      ','.join(parsed_args.root_preferred)))
    pairs += [('alternatives', value) for value in parsed_args.alternatives]
    return pairs + [('explain', 'true')]


def base_query(parsed_args):
    """The pairs of the arguments add_query_arguments adds."""
    pairs = list(parsed_args.parameters) + (
        allocation_candidates.can_split_pairs(parsed_args.can_split))
    if parsed_args.rank_by:
        pairs.append(('rank_by', ','.join(parsed_args.rank_by)))
    if parsed_args.limit is not None:
        pairs.append(('limit', str(parsed_args.limit)))
    return pairs


def add_query_arguments(parser, examples, rank_by_help, limit_help):
    """The arguments of a command sending a candidates query: its
    parameters as KEY=VALUE, ``--rank-by``, ``--limit`` and
    ``--can-split``."""
    parser.add_argument(
        'parameters', metavar='<key=value>',
        type=allocation_candidates.parameter, nargs='+',
        help='A query parameter of GET /allocation_candidates, e.g. '
             '%s; repeat for several' % examples)
    parser.add_argument(
        '--rank-by', metavar='<spread|pack>:<class>', action='append',
        default=[], help=rank_by_help)
    parser.add_argument('--limit', metavar='<n>', type=int, help=limit_help)
    allocation_candidates.add_can_split_argument(parser)


def allocations_text(request):
    """An allocation request's allocations as one line."""
    return '; '.join(
        '%s: %s' % (uuid, ', '.join('%s=%s' % item for item
                                    in given['resources'].items()))
        for uuid, given in request['allocations'].items())


def _skipped(skipped):
    return '; '.join(
        '%s: %s%s' % (','.join(each['alternatives']), each['step'],
                      ' (%s)' % each['group'] if 'group' in each else '')
        for each in skipped)


def rows(body):
    """A row per candidate, in the answer's order, with its rank key."""
    keys = body['explain']['ranking']['candidates']
    for rank, (request, key) in enumerate(
            zip(body['allocation_requests'], keys), 1):
        yield (rank, key['tree'], ','.join(key['alternatives']),
               key['preferred'], key['round'],
               ', '.join('%s=%s' % item for item in key['free'].items()),
               allocations_text(request), _skipped(key['skipped']))


class RankAllocationCandidate(command.Lister):
    """List the best allocation candidates by a rank key.

    Requires ``--os-placement-api-version 1.42`` (the default; 1.44
    with ``--can-split``).
    """

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        add_query_arguments(
            parser, 'resources=VCPU:2,MEMORY_MB:1024, '
                    'preferred_GPU=CUSTOM_X, group_policy=none',
            'Order by the free capacity of a class after the candidate: '
            'spread (most free first) or pack (least free first); repeat '
            'to break ties', 'The best n candidates')
        parser.add_argument(
            '--preferred', metavar='<trait>', action='append', default=[],
            help='A trait preferred on the unsuffixed group\'s providers; '
                 'repeat for several (a suffixed group: preferred_X=...)')
        parser.add_argument(
            '--root-preferred', metavar='<trait>', action='append',
            default=[], help='A trait preferred on the root provider')
        parser.add_argument(
            '--alternatives', metavar='<suffix,suffix,...>',
            action='append', default=[],
            help='Suffixed groups that are alternatives of one group, '
                 'first preferred; repeat for several sets')
        return parser

    def take_action(self, parsed_args):
        http = self.app.client_manager.placement_lite
        pairs = query(parsed_args)
        body = http.request(
            'GET', '/allocation_candidates?' + urllib.parse.urlencode(pairs),
            allocation_candidates.version_for(pairs, MICROVERSION)).json()
        return COLUMNS, list(rows(body))
