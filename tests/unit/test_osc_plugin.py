"""The openstackclient plugin and its commands take their microversions
from placement_lite.microversion without loading the server."""

import subprocess
import sys

SERVER_LIBRARIES = ('falcon', 'sqlalchemy', 'webob', 'oslo_db')


def test_plugin_and_commands_load_no_server_code():
    loaded = subprocess.run(
        [sys.executable, '-c',
         'import sys, placement_lite.osc.plugin, '
         'placement_lite.osc.device_profiles, '
         'placement_lite.osc.allocation_candidates; '
         'print("\\n".join(sys.modules))'],
        capture_output=True, text=True, check=True).stdout.split()
    ours = {name for name in loaded if name.startswith('placement_lite.')}
    assert ours == {
        'placement_lite.microversion', 'placement_lite.osc',
        'placement_lite.osc.plugin', 'placement_lite.osc.http',
        'placement_lite.osc.device_profiles',
        'placement_lite.osc.allocation_candidates'}
    assert not [name for name in loaded
                if name.split('.')[0] in SERVER_LIBRARIES]
