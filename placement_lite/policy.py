"""Policy enforcement with oslo.policy."""

from oslo_policy import policy

from placement_lite import errors
from placement_lite import policies


class PolicyNotAuthorized(errors.Forbidden):
    def __init__(self, action, **_kwargs):
        super().__init__('Policy does not allow %s to be performed.' % action)


class Enforcer:
    """The rules of one service instance: defaults overridden by the policy file."""

    def __init__(self, conf):
        self._enforcer = policy.Enforcer(conf)
        self._enforcer.suppress_default_change_warnings = True
        self._enforcer.suppress_deprecation_warnings = True
        self._enforcer.register_defaults(policies.list_rules())
        self._enforcer.load_rules()

    def authorize(self, context, action, target):
        try:
            self._enforcer.authorize(action, target, context, do_raise=True,
                                     exc=PolicyNotAuthorized, action=action)
        except policy.InvalidScope:
            raise PolicyNotAuthorized(action)
