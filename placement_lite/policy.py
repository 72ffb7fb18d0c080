"""Policy enforcement with oslo.policy."""

import os
import stat

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
    file and directories (read again when they change, as oslo.policy
    does).

    oslo.policy looks for changes on every check (``load_rules``: the
    policy file searched for in every configuration directory until it
    is found, each policy directory listed, every registered rule walked),
    which costs a small request more than its SQL. So it is asked only
    when one of the paths it reads could have changed (PolicyFiles):
    its decision is then the one it would have made.

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
        self._files = PolicyFiles(conf)
        self._seen = self._files.state()
        self._enforcer.load_rules()
        self._rules = self._enforcer.rules
        self._decisions = {}

    def authorize(self, context, action, target):
        seen = self._files.state()
        if seen != self._seen:
            self._seen = seen
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


class PolicyFiles:
    """Every path oslo.policy may read rules from: the policy file and
    each policy directory, wherever ``conf.find_file`` would look for
    them (the directories of ``--config-dir`` and of the configuration
    files, then oslo.config's standard ones), and the files in a policy
    directory found.

    :meth:`state` is a value that differs whenever a file or directory
    appeared at one of them, went, or was written: oslo.policy notices a
    change by a later modification time, which moves the state too.
    """

    def __init__(self, conf):
        names = [conf.oslo_policy.policy_file,
                 *conf.oslo_policy.policy_dirs]
        directories = [_expanded(directory)
                       for directory in conf.config_dirs]
        directories += [os.path.dirname(_expanded(path))
                        for path in reversed(conf.config_file)]
        # What conf.find_file searches last: oslo.config's own list.
        directories += cfg._get_config_dirs(conf.project)
        self.paths = list(dict.fromkeys(
            os.path.join(directory, name)
            for name in names for directory in directories))

    def state(self):
        return tuple(_stat_of(path) for path in self.paths)


def _expanded(path):
    return os.path.abspath(os.path.expanduser(path))


def _stat_of(path):
    """What identifies the version of ``path``: None when it is missing;
    for a directory, its own and each of its files'."""
    try:
        found = os.stat(path)
    except OSError:
        return None
    version = (found.st_ino, found.st_mtime_ns, found.st_size)
    if not stat.S_ISDIR(found.st_mode):
        return version
    try:
        names = sorted(os.listdir(path))
    except OSError:
        return version
    return (version, tuple(
        (name, _stat_of(os.path.join(path, name))) for name in names))


def _frozen(values):
    """A mapping of names to strings, lists of strings or None, hashable."""
    return tuple(sorted(
        (name, tuple(value) if isinstance(value, list) else value)
        for name, value in values.items()))
