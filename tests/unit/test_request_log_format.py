"""requestlog.QuickContextFormatter writes the line oslo.log's
ContextFormatter writes, character for character, for every record: the
kind it makes itself (INFO, no exception, the request's context or none)
and the kind it leaves to oslo.log, under the default formats and under
formats that show every value a record or a context holds."""

import logging
import sys

import pytest
from oslo_config import cfg
from oslo_context import context as oslo_context
from oslo_log import formatters
from oslo_log import log as oslo_log

from placement_lite import requestlog

#: A format showing what a record, oslo.log and the context give.
EVERYTHING = (
    '%(asctime)s.%(msecs)03d %(isotime)s %(process)d %(levelname)s '
    '%(name)s %(funcName)s:%(lineno)d %(project)s %(version)s '
    '[%(global_request_id)s %(request_id)s %(user_identity)s] %(color)s'
    '%(instance)s%(resource)s %(user_name)s %(project_name)s %(user)s '
    '%(project_id)s %(roles)s %(auth_token)s %(is_admin)s '
    '%(error_summary)s %(message)s')


def _conf(**overrides):
    conf = cfg.ConfigOpts()
    oslo_log.register_options(conf)
    conf([])
    for name, value in overrides.items():
        conf.set_override(name, value)
    return conf


def _context(**values):
    given = dict(request_id='req-6d82806f-1961-4535-8e30-da1b01b155c5',
                 global_request_id='req-6f0c1b55-3a4e-4f3b-9a51-2f6d1f8c1e0a',
                 user_id='admin', project_id='the-project',
                 roles=['admin', 'service'], auth_token='secret')
    given.update(values)
    return oslo_context.RequestContext(**given)


def _records(level, msg, args, extra, exc_info):
    """Two records alike: one for each formatter (formatting changes a
    record)."""
    logger = logging.getLogger('placement_lite.requestlog')
    made = [logger.makeRecord(logger.name, level, __file__, 42, msg, args,
                              exc_info, 'handler', extra)
            for _ in range(2)]
    made[1].created = made[0].created
    made[1].msecs = made[0].msecs
    made[1].relativeCreated = made[0].relativeCreated
    return made


def _formatters(conf):
    kwargs = dict(project='placement_lite', version='16.0.0',
                  datefmt=conf.log_date_format, config=conf)
    return (formatters.ContextFormatter(**kwargs),
            requestlog.QuickContextFormatter(**kwargs))


CASES = {
    'the request context': dict(current=_context()),
    'no context': dict(current=None),
    'no request id': dict(current=_context(request_id=None)),
    'a context given with the record': dict(
        current=None, extra={'context': _context(user_id='other')}),
    'a message with arguments': dict(
        current=_context(), msg='%s "%s" status: %s', args=(
            '127.0.0.1', 'GET /', 200)),
    'no user, project or roles': dict(current=_context(
        user_id=None, project_id=None, roles=[])),
    # Left to oslo.log:
    'DEBUG': dict(current=_context(), level=logging.DEBUG),
    'WARNING': dict(current=_context(), level=logging.WARNING),
    'an exception': dict(current=_context(), level=logging.ERROR,
                         exc_info=True),
    'an instance': dict(current=_context(), extra={'instance': {
        'uuid': 'a1000000-0000-4000-8000-000000000001'}}),
    'a resource of the context': dict(current=_context(
        resource_uuid='b2000000-0000-4000-8000-000000000002')),
    'a context as a dict': dict(current=None, extra={
        'context': {'request_id': 'req-1', 'user': 'u'}}),
}

FORMATS = {
    'default formats': {},
    'every value': dict(logging_context_format_string=EVERYTHING,
                        logging_default_format_string=EVERYTHING),
    'error summary, identity': dict(
        logging_context_format_string='%(error_summary)s %(user_identity)s '
                                      '%(message)s',
        logging_user_identity_format='%(user)s/%(tenant)s/%(roles)s'),
}


@pytest.mark.parametrize('case', CASES)
@pytest.mark.parametrize('formats', FORMATS)
def test_the_line_is_oslo_log_s(case, formats, monkeypatch):
    given = CASES[case]
    oslo_formatter, quick = _formatters(_conf(**FORMATS[formats]))
    current = given['current']
    monkeypatch.setattr(oslo_context, 'get_current', lambda: current)
    exc_info = None
    if given.get('exc_info'):
        try:
            raise ValueError('broken')
        except ValueError:
            exc_info = sys.exc_info()
    theirs, ours = _records(given.get('level', logging.INFO),
                            given.get('msg', 'a line'), given.get('args', ()),
                            given.get('extra'), exc_info)
    try:
        expected = oslo_formatter.format(theirs)
    except ValueError:
        # A format showing what such a record lacks: oslo.log refuses it.
        with pytest.raises(ValueError):
            quick.format(ours)
        return
    assert quick.format(ours) == expected
    # What oslo.log leaves on the record, the ISO time aside when the
    # line does not show it.
    if 'isotime' not in ours.__dict__:
        del theirs.__dict__['isotime']
    assert ours.__dict__ == theirs.__dict__


def test_setup_gives_each_handler_the_quick_formatter(monkeypatch):
    monkeypatch.setattr(logging.getLogger(), 'handlers', [])
    requestlog.setup(_conf())
    formats = [type(handler.formatter)
               for handler in logging.getLogger().handlers]
    assert formats == [requestlog.QuickContextFormatter]
