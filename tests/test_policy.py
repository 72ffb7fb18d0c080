"""Policy files are read again when they change, as oslo.policy reads
them: a file written, edited or removed while the service runs decides
the next request; and nothing is read again while nothing changed."""

import os
import time

from oslo_config import cfg
from oslo_policy import policy as oslo_policy
import pytest

from placement_lite import conf as config
from placement_lite import policy
from tests import harness

LIST = 'placement:resource_providers:list'


@pytest.fixture
def paths(tmp_path):
    return tmp_path / 'policy.yaml', tmp_path / 'policy.d'


@pytest.fixture
def environment(paths):
    policy_file, policy_dir = paths
    env = harness.Environment('sqlite', **{
        'oslo_policy.policy_file': str(policy_file),
        'oslo_policy.policy_dirs': [str(policy_dir)]})
    yield env
    env.close()


def _listing_status(environment):
    return environment.request('GET', '/resource_providers')[0]


def _write(path, text, later):
    """Write ``text`` to ``path`` and date it ``later`` seconds from now:
    two writes within the file system's clock tick would look unchanged to
    oslo.policy too (it compares modification times)."""
    path.write_text(text)
    moment = time.time() + later
    os.utime(path, (moment, moment))


def test_a_policy_file_written_edited_and_removed_is_seen(environment,
                                                          paths):
    policy_file, _policy_dir = paths
    assert _listing_status(environment) == 200
    _write(policy_file, '"%s": "!"\n' % LIST, 10)
    assert _listing_status(environment) == 403
    _write(policy_file, '"%s": "@"\n' % LIST, 20)
    assert _listing_status(environment) == 200
    _write(policy_file, '"%s": "!"\n' % LIST, 30)
    assert _listing_status(environment) == 403
    policy_file.unlink()
    assert _listing_status(environment) == 200


def test_a_file_in_a_policy_directory_is_seen(environment, paths):
    policy_file, policy_dir = paths
    # oslo.policy reads the directories only when the policy file exists.
    _write(policy_file, '{}\n', 10)
    assert _listing_status(environment) == 200
    policy_dir.mkdir()
    _write(policy_dir / 'deny.yaml', '"%s": "!"\n' % LIST, 20)
    assert _listing_status(environment) == 403
    _write(policy_dir / 'deny.yaml', '"%s": "@"\n' % LIST, 30)
    assert _listing_status(environment) == 200


def test_the_rules_are_not_read_again_while_nothing_changed(environment,
                                                            paths,
                                                            monkeypatch):
    policy_file, _policy_dir = paths
    _write(policy_file, '"%s": "@"\n' % LIST, 10)
    assert _listing_status(environment) == 200
    loads = []
    original = oslo_policy.Enforcer.load_rules
    monkeypatch.setattr(
        oslo_policy.Enforcer, 'load_rules',
        lambda self, *args: loads.append(args) or original(self, *args))
    for _ in range(3):
        assert _listing_status(environment) == 200
    assert loads == []
    _write(policy_file, '"%s": "!"\n' % LIST, 20)
    assert _listing_status(environment) == 403
    # Read again (oslo.policy's enforce reads them once more itself).
    assert loads


def test_the_paths_watched_are_those_find_file_searches(tmp_path):
    conf = cfg.ConfigOpts()
    config.register_opts(conf)
    conf(['--config-dir', str(tmp_path)], project='placement',
         default_config_files=[])
    policy.oslo_enforcer(conf)
    found = tmp_path / 'policy.yaml'
    found.write_text('{}')
    watched = policy.PolicyFiles(conf).paths
    assert conf.find_file('policy.yaml') == str(found)
    assert watched[0] == str(found)
    assert os.path.expanduser('~/.placement/policy.yaml') in watched
    assert '/etc/placement/policy.d' in watched
