"""Policy enforcement with oslo.policy."""

from oslo_config import cfg
from oslo_policy import policy

from placement_lite import errors
from placement_lite import policies


class PolicyNotAuthorized(errors.Forbidden):
    answered_by = errors.DISPATCHER

    def __init__(self, action, **_kwargs):
        super().__init__('Policy does not allow %s to be performed.' % action)


def oslo_enforcer(conf):
    """oslo.policy's Enforcer for ``conf``, with placement's defaults."""
    enforcer = policy.Enforcer(conf)
    enforcer.suppress_default_change_warnings = True
    enforcer.suppress_deprecation_warnings = True
    enforcer.register_defaults(policies.list_rules())
    return enforcer


def get_enforcer():
    """For oslo.policy's commands (``oslopolicy-policy-generator``,
    ``oslopolicy-validator``, ...): placement's rules on the configuration
    those commands parsed from their own ``--config-file``."""
    return oslo_enforcer(cfg.CONF)


class Enforcer:
    """The rules of one service instance: defaults overridden by the policy file."""

    def __init__(self, conf):
        self._enforcer = oslo_enforcer(conf)
        self._enforcer.load_rules()

    def authorize(self, context, action, target):
        try:
            self._enforcer.authorize(action, target, context, do_raise=True,
                                     exc=PolicyNotAuthorized, action=action)
        except policy.InvalidScope:
            raise PolicyNotAuthorized(action)
