"""``openstack device profile create|list|show|delete``."""

import argparse
import urllib.parse

from osc_lib.cli import format_columns
from osc_lib.command import command
from osc_lib import exceptions

from placement_lite import microversion

#: The microversion of the requests, unless the user names one: the first
#: whose profiles show their alternatives.
MICROVERSION = str(microversion.PROFILE_ALTERNATIVES)
BASE_URL = '/device_profiles'
COLUMNS = ('uuid', 'name', 'description', 'groups', 'alternatives',
           'created_at', 'updated_at')
LIST_COLUMNS = ('uuid', 'name', 'description', 'groups', 'alternatives')


def _profile_url(uuid_or_name):
    return '%s/%s' % (BASE_URL, urllib.parse.quote(uuid_or_name, safe=''))


def _group(text):
    """``KEY=VALUE[,KEY=VALUE...]`` as an ordered dict (values may hold '=')."""
    group = {}
    for item in text.split(','):
        key, sep, value = item.partition('=')
        if not sep or not key:
            raise argparse.ArgumentTypeError(
                'expected KEY=VALUE[,KEY=VALUE...], got %r' % item)
        group[key] = value
    return group


def _positions(text):
    """``I,J[,K...]``: one set of alternatives, as group positions."""
    try:
        positions = [int(item) for item in text.split(',')]
    except ValueError:
        positions = []
    if not positions or min(positions) < 0:
        raise argparse.ArgumentTypeError(
            'expected group positions I,J[,K...] (from 0), got %r' % text)
    return positions


def _row(profile, columns):
    values = dict(profile, groups=format_columns.ListDictColumn(
        profile['groups']))
    return tuple(values.get(column) for column in columns)


class CreateDeviceProfile(command.ShowOne):
    """Create a device profile: a named, ordered list of request groups.

    Requires ``--os-placement-api-version`` 1.40 or later, 1.42 with
    ``--alternatives`` (the default is 1.42).
    """

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('name', metavar='<name>',
                            help='Unique name of the device profile')
        parser.add_argument(
            '--group', metavar='<key=value[,key=value...]>', type=_group,
            action='append', dest='groups', required=True,
            help='One request group, e.g. resources:FPGA=1,'
                 'trait:CUSTOM_FPGA_ARRIA10=required,accel:attach_target=VM; '
                 'repeat for several groups, in order')
        parser.add_argument(
            '--alternatives', metavar='<i,j[,k...]>', type=_positions,
            action='append', dest='alternatives',
            help='Groups that are alternatives for one need, by position '
                 'from 0 in --group order, first choice first: 0,1 asks '
                 'for the first group, else the second; repeat for '
                 'several sets')
        parser.add_argument('--description', metavar='<text>',
                            help='Description of the device profile')
        return parser

    def take_action(self, parsed_args):
        body = {'name': parsed_args.name, 'groups': parsed_args.groups}
        if parsed_args.alternatives:
            body['alternatives'] = parsed_args.alternatives
        if parsed_args.description is not None:
            body['description'] = parsed_args.description
        http = self.app.client_manager.placement_lite
        profile = http.request('POST', BASE_URL, MICROVERSION,
                               json=body).json()
        return COLUMNS, _row(profile, COLUMNS)


class ListDeviceProfile(command.Lister):
    """List device profiles.

    Requires ``--os-placement-api-version`` 1.40 or later; alternatives
    are shown from 1.42 (the default).
    """

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument(
            '--name', metavar='<name>', action='append', dest='names',
            help='Only the profile with this name (repeat for several)')
        return parser

    def take_action(self, parsed_args):
        url = BASE_URL
        if parsed_args.names:
            url += '?' + urllib.parse.urlencode(
                {'name': ','.join(parsed_args.names)})
        http = self.app.client_manager.placement_lite
        profiles = http.request('GET', url,
                                MICROVERSION).json()['device_profiles']
        return LIST_COLUMNS, [_row(profile, LIST_COLUMNS)
                              for profile in profiles]


class ShowDeviceProfile(command.ShowOne):
    """Show a device profile.

    Requires ``--os-placement-api-version`` 1.40 or later; alternatives
    are shown from 1.42 (the default).
    """

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('uuid_or_name', metavar='<name-or-uuid>',
                            help='Name or UUID of the device profile')
        return parser

    def take_action(self, parsed_args):
        http = self.app.client_manager.placement_lite
        profile = http.request('GET', _profile_url(parsed_args.uuid_or_name),
                               MICROVERSION).json()
        return COLUMNS, _row(profile['device_profile'], COLUMNS)


class DeleteDeviceProfile(command.Command):
    """Delete device profiles.

    Requires ``--os-placement-api-version`` 1.40 or later (the default
    is 1.42).
    """

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('uuids_or_names', metavar='<name-or-uuid>',
                            nargs='+',
                            help='Name or UUID of a device profile to delete')
        return parser

    def take_action(self, parsed_args):
        http = self.app.client_manager.placement_lite
        failures = []
        for uuid_or_name in parsed_args.uuids_or_names:
            try:
                http.request('DELETE', _profile_url(uuid_or_name),
                             MICROVERSION)
            except exceptions.ClientException as exc:
                failures.append('%s: %s' % (uuid_or_name, exc.message))
        if failures:
            raise exceptions.CommandError(
                'Failed to delete %d of %d device profiles:\n%s' % (
                    len(failures), len(parsed_args.uuids_or_names),
                    '\n'.join(failures)))
