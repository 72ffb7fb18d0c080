"""The request context: who is asking, and the service's shared objects."""

from oslo_context import context as oslo_context


class RequestContext(oslo_context.RequestContext):
    """An oslo context carrying the configuration and the database.

    Handlers get it as ``req.context.placement``; the domain receives it (or
    just its ``db``) explicitly, never the HTTP request.
    """

    def __init__(self, *args, conf=None, db=None, enforcer=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.conf = conf
        self.db = db
        self.enforcer = enforcer

    def can(self, action, target=None):
        """Raise Forbidden unless policy allows ``action`` for this context."""
        if target is None:
            target = {'project_id': self.project_id, 'user_id': self.user_id}
        self.enforcer.authorize(self, action, target)
