"""Request bodies and query strings checked against the routes' JSON
schemas, in time linear in what is checked (schema_errors), and the
bounds the schemas cannot say."""

import jsonschema

from placement_lite import errors
from placement_lite import querystring
from placement_lite import schema_errors
from placement_lite.schemas import common as schemas_common

#: Bodies accept any uuid spelling oslo accepts (no dashes, braces, urn:).
_BODY_FORMATS = jsonschema.FormatChecker()
_BODY_FORMATS.checks('uuid')(querystring.is_uuid_like)


#: {(id(schema), id(format checker)): (schema, its Checker)}: schemas are
#: module constants, each compiled once.
_CHECKERS = {}


def schema_error(data, schema, format_checker=_BODY_FORMATS):
    """The error ``jsonschema.validate`` would raise for ``data`` (a
    request body, or a query string's last value of each key), or None,
    found in time linear in ``data`` (see schema_errors): at most a few
    microseconds for a valid query string, where building jsonschema's
    validator costs a quarter of a millisecond."""
    key = id(schema), id(format_checker)
    if key not in _CHECKERS:
        _CHECKERS[key] = (schema, schema_errors.Checker(schema,
                                                        format_checker))
    return _CHECKERS[key][1].best_error(data)


def validate(data, schema, code=errors.DEFAULT):
    """400 with jsonschema's best match when ``data`` breaks ``schema``
    (a module constant), found in time linear in ``data``."""
    error = schema_error(data, schema)
    if error is not None:
        raise errors.BadRequest(
            'JSON does not validate: %s' % schema_errors.describe(error),
            code=code)


def refuse_amounts_beyond_column(data):
    """400 for an allocation amount (any ``resources`` mapping of a valid
    allocations body) larger than its 32-bit column holds: the reference's
    schema has no maximum and its database fails with a 500."""
    pending = [data]
    while pending:
        value = pending.pop()
        if isinstance(value, dict):
            amounts = value.get('resources')
            if isinstance(amounts, dict):
                for amount in amounts.values():
                    if isinstance(amount, int) and amount > schemas_common.MAX_INT:
                        raise errors.BadRequest(
                            'JSON does not validate: %d is greater than the '
                            'maximum of %d' % (amount, schemas_common.MAX_INT))
            children = value.values()
        elif isinstance(value, list):
            children = value
        else:
            continue
        # Only containers hold amounts: a map of 120,000 amounts is not
        # walked amount by amount.
        pending.extend([child for child in children
                        if isinstance(child, (dict, list))])
