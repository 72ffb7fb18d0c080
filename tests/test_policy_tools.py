"""oslo.policy's commands work on placement_lite's rules, as on the
reference's: operators validate and generate policy files with them."""

import os
import subprocess
import sys

import pytest

BIN = os.path.dirname(sys.executable)
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _policy_command(tmp_path, command, policy_text):
    policy_file = tmp_path / 'policy.yaml'
    policy_file.write_text(policy_text)
    config = tmp_path / 'placement.conf'
    config.write_text('[oslo_policy]\npolicy_file = %s\n' % policy_file)
    return subprocess.run(
        [os.path.join(BIN, command), '--namespace', 'placement_lite',
         '--config-file', str(config)], capture_output=True, text=True)


@pytest.mark.parametrize('policy_text, returncode, output', [
    ('"placement:traits:list": "role:reader"\n', 0, ''),
    ('"placement:traits:list": "role:reader and"\n', 1,
     'Failed to parse rule: role:reader and\n'),
    ('"placement:no_such_action": "role:reader"\n', 1,
     'Unknown rule found in policy file: placement:no_such_action\n'),
])
def test_validator_checks_a_policy_file(tmp_path, policy_text, returncode,
                                        output):
    validated = _policy_command(tmp_path, 'oslopolicy-validator',
                                policy_text)

    assert validated.returncode == returncode
    assert validated.stdout + validated.stderr == output


def test_policy_generator_merges_the_file_over_the_defaults(tmp_path):
    generated = _policy_command(tmp_path, 'oslopolicy-policy-generator',
                                '"placement:traits:list": "role:reader"\n')

    assert generated.returncode == 0, generated.stderr
    lines = generated.stdout.splitlines()
    assert '"placement:traits:list": "role:reader"' in lines
    assert ('"placement:resource_providers:list": '
            '"rule:admin_or_service_api"') in lines


def test_the_shipped_sample_is_what_the_rules_generate(tmp_path):
    """etc/policy.yaml.sample cannot drift from placement_lite.policies."""
    sample = tmp_path / 'policy.yaml.sample'
    subprocess.run([os.path.join(BIN, 'oslopolicy-sample-generator'),
                    '--namespace', 'placement_lite', '--output-file',
                    str(sample)], check=True, capture_output=True)

    with open(os.path.join(REPO, 'etc', 'policy.yaml.sample')) as shipped:
        assert shipped.read() == sample.read_text()
