"""``openstack allocation candidate explain``: the steps of a candidates
search as a table (microversion 1.41, api-ref/extensions.md); and the
``--can-split`` option it shares with ``rank`` and ``claim`` (1.44)."""

import argparse
import urllib.parse

from osc_lib.command import command

from placement_lite import microversion

MICROVERSION = str(microversion.EXPLAIN)
COLUMNS = ('Group', 'Step', 'Resource class', 'Amount', 'Kept', 'Of',
           'Detail')
#: The numbers an exclusion may carry, in the order they are shown.
_EXCLUSION_NUMBERS = ('amount', 'capacity', 'used', 'min_unit', 'max_unit',
                      'step_size', 'largest')


def parameter(text):
    """``KEY=VALUE`` as a pair (the value may hold '=')."""
    key, sep, value = text.partition('=')
    if not sep or not key:
        raise argparse.ArgumentTypeError('expected KEY=VALUE, got %r' % text)
    return key, value


def add_can_split_argument(parser):
    """``--can-split [SUFFIX=]CLASS[,CLASS...]``, repeatable (1.44)."""
    parser.add_argument(
        '--can-split', metavar='[<suffix>=]<class>[,<class>...]',
        action='append', default=[], dest='can_split',
        help='Classes the unsuffixed group (or, with <suffix>=, the group '
             '<suffix>) may take from several providers of a tree; repeat '
             'for several groups (microversion 1.44)')


def can_split_pairs(values):
    """The ``can_split{suffix}`` query pairs of ``--can-split`` values,
    the classes of one group joined."""
    by_suffix = {}
    for value in values:
        suffix, sep, classes = value.rpartition('=')
        by_suffix.setdefault(suffix if sep else '', []).append(classes)
    return [('can_split' + suffix, ','.join(classes))
            for suffix, classes in by_suffix.items()]


def version_for(pairs, version):
    """A command's microversion ``version`` (older than can_split), or
    can_split's when the query ``pairs`` split."""
    if any(key.startswith('can_split') for key, _value in pairs):
        return str(microversion.CAN_SPLIT)
    return version


def _label(suffix):
    return suffix or '(unsuffixed)'


def _step_rows(label, steps, emptied_by):
    for step in steps:
        unit = 'trees' if 'trees' in step else 'providers'
        yield (label, step['step'], step.get('resource_class'),
               step.get('amount'), step[unit], unit,
               'emptied' if step == emptied_by else '')


def _provider_row(label, row):
    excluded = row['excluded_by']
    if excluded is None:
        detail = '%s: passes' % row['uuid']
        step = resource_class = amount = None
    else:
        numbers = ', '.join('%s %s' % (name, excluded[name])
                            for name in _EXCLUSION_NUMBERS
                            if name in excluded)
        detail = '%s: excluded by %s%s' % (
            row['uuid'], excluded['step'],
            ' (%s)' % numbers if numbers else '')
        step = excluded['step']
        resource_class = excluded.get('resource_class')
        amount = excluded.get('amount')
    return (label, step, row.get('resource_class') or resource_class, amount,
            None, 'provider', detail)


def rows(explain):
    """The table of an ``explain`` member: each group's steps (and, with
    explain=<uuid>, its providers), then the tree steps."""
    for group in explain['groups']:
        label = _label(group['suffix'])
        yield from _step_rows(label, group['steps'], group['emptied_by'])
        for row in group.get('providers', ()):
            yield _provider_row(label, row)
    trees = explain['trees']
    yield from _step_rows('(trees)', trees['steps'], trees['emptied_by'])


class ExplainAllocationCandidate(command.Lister):
    """Explain what each step of an allocation candidates search kept.

    Requires ``--os-placement-api-version 1.41`` (the default; 1.44
    with ``--can-split``).
    """

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument(
            'parameters', metavar='<key=value>', type=parameter, nargs='+',
            help='A query parameter of GET /allocation_candidates, e.g. '
                 'resources=VCPU:2,MEMORY_MB:1024, required_NIC=CUSTOM_X, '
                 'group_policy=none; repeat for several')
        parser.add_argument(
            '--provider', metavar='<uuid>',
            help="Explain this provider's tree alone, and why each of its "
                 'providers is out')
        add_can_split_argument(parser)
        return parser

    def take_action(self, parsed_args):
        pairs = (parsed_args.parameters
                 + can_split_pairs(parsed_args.can_split))
        query = urllib.parse.urlencode(
            pairs + [('explain', parsed_args.provider or 'true')])
        http = self.app.client_manager.placement_lite
        body = http.request('GET', '/allocation_candidates?' + query,
                            version_for(pairs, MICROVERSION)).json()
        return COLUMNS, list(rows(body['explain']))
