"""Policy defaults, the secure-RBAC switch and policy-file overrides."""

import os

import pytest

from placement_lite import context
from placement_lite import policy
from tests import harness


def _ctx(roles, project_id='p1'):
    return context.RequestContext(user_id='u1', project_id=project_id,
                                  roles=roles)


def test_admin_may_and_member_may_not_by_default():
    enforcer = policy.Enforcer(harness.make_conf())
    enforcer.authorize(_ctx(['admin']), 'placement:traits:list', {})
    with pytest.raises(policy.PolicyNotAuthorized) as raised:
        enforcer.authorize(_ctx(['member']), 'placement:traits:list', {})
    assert raised.value.detail == (
        'Policy does not allow placement:traits:list to be performed.')


def test_new_defaults_drop_the_legacy_admin_rule_for_service_apis():
    legacy = policy.Enforcer(harness.make_conf(
        **{'oslo_policy.enforce_new_defaults': False}))
    new = policy.Enforcer(harness.make_conf(
        **{'oslo_policy.enforce_new_defaults': True}))
    legacy.authorize(_ctx(['admin']), 'placement:reshaper:reshape', {})
    legacy.authorize(_ctx(['service']), 'placement:reshaper:reshape', {})
    new.authorize(_ctx(['service']), 'placement:reshaper:reshape', {})
    with pytest.raises(policy.PolicyNotAuthorized):
        new.authorize(_ctx(['admin']), 'placement:reshaper:reshape', {})


def test_project_reader_sees_its_own_usages_with_new_defaults():
    enforcer = policy.Enforcer(harness.make_conf(
        **{'oslo_policy.enforce_new_defaults': True}))
    enforcer.authorize(_ctx(['reader']), 'placement:usages',
                       {'project_id': 'p1'})
    with pytest.raises(policy.PolicyNotAuthorized):
        enforcer.authorize(_ctx(['reader']), 'placement:usages',
                           {'project_id': 'p2'})


def test_policy_file_overrides_a_default(tmp_path):
    policy_file = tmp_path / 'policy.yaml'
    policy_file.write_text('"placement:traits:list": "role:observer"\n')
    enforcer = policy.Enforcer(harness.make_conf(
        **{'oslo_policy.policy_file': str(policy_file)}))
    enforcer.authorize(_ctx(['observer']), 'placement:traits:list', {})
    with pytest.raises(policy.PolicyNotAuthorized):
        enforcer.authorize(_ctx(['admin']), 'placement:traits:list', {})


def test_a_changed_policy_file_is_obeyed_at_the_next_check(tmp_path):
    policy_file = tmp_path / 'policy.yaml'
    policy_file.write_text('"placement:traits:list": "role:observer"\n')
    enforcer = policy.Enforcer(harness.make_conf(
        **{'oslo_policy.policy_file': str(policy_file)}))
    enforcer.authorize(_ctx(['observer']), 'placement:traits:list', {})

    changed = policy_file.stat().st_mtime + 1
    policy_file.write_text('"placement:traits:list": "role:auditor"\n')
    os.utime(policy_file, (changed, changed))

    enforcer.authorize(_ctx(['auditor']), 'placement:traits:list', {})
    with pytest.raises(policy.PolicyNotAuthorized):
        enforcer.authorize(_ctx(['observer']), 'placement:traits:list', {})
