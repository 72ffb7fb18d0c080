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
    """The rules of one service instance: defaults overridden by the policy
    file (reloaded when it changes, as oslo.policy does on every check).

    A decision depends only on the rules, the action, the target and the
    caller's credentials, and working one out costs more than the rest of
    a small request (oslo.policy inspects the signature of every check it
    calls), so each is remembered while the rules are the same object:
    oslo.policy replaces them whenever it reloads a changed file.
    """

    #: Decisions remembered at most; more distinct callers and targets than
    #: this start the memory afresh.
    MAX_DECISIONS = 10_000

    def __init__(self, conf):
        self._enforcer = oslo_enforcer(conf)
        self._enforcer.load_rules()
        self._rules = self._enforcer.rules
        self._decisions = {}

    def authorize(self, context, action, target):
        self._enforcer.load_rules()
        if self._enforcer.rules is not self._rules:
            self._rules = self._enforcer.rules
            self._decisions = {}
        key = (action, _frozen(target), _frozen(context.to_policy_values()))
        allowed = self._decisions.get(key)
        if allowed is None:
            if len(self._decisions) >= self.MAX_DECISIONS:
                self._decisions = {}
            allowed = self._decisions[key] = self._decide(context, action,
                                                          target)
        if not allowed:
            raise PolicyNotAuthorized(action)

    def _decide(self, context, action, target):
        try:
            return bool(self._enforcer.authorize(action, target, context))
        except policy.InvalidScope:
            return False


def _frozen(values):
    """A mapping of names to strings, lists of strings or None, hashable."""
    return tuple(sorted(
        (name, tuple(value) if isinstance(value, list) else value)
        for name, value in values.items()))
