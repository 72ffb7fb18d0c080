"""A request body's JSON, parsed as Placement parses it, with what a
hostile body may hold refused: nesting beyond MAX_JSON_DEPTH, and strings
(keys too) the database cannot store (a NUL character, a lone surrogate).
Beside request_body, which makes the body whole: this reads what it
holds. Pure functions of the body's bytes; they raise
:class:`placement_lite.errors.BadRequest` with the message a client
sees.
"""

import itertools
import json
import operator
import re

from placement_lite import errors


def parsed(raw):
    """The JSON document of the UTF-8 body ``raw`` (a byte order mark is
    refused, as the reference refuses it); 400 when it does not parse, or
    holds what the database cannot store, or nests too deep."""
    try:
        text = raw.decode('utf-8')
        data = json.loads(text, parse_constant=_number_constant)
    except ValueError as exc:
        raise errors.BadRequest('Malformed JSON: %s' % exc)
    except RecursionError:
        raise _too_deep()
    check_values(text, data)
    return data


def _number_constant(name):
    """``Infinity`` as Python's parser reads it: the schemas' maxima refuse
    it with the reference's words. ``NaN`` and ``-Infinity``, which no
    schema bound refuses and which JSON does not have, are malformed
    (the reference fails with a 500 when it works a capacity out of
    them)."""
    if name == 'Infinity':
        return float(name)
    raise ValueError('%s is not a JSON number' % name)


#: Placement's deepest body (POST /allocations) nests 5 levels; a deeper
#: one would only make the validator recurse until it fails.
MAX_JSON_DEPTH = 32

_NUL = 'Malformed JSON: strings may not contain the NUL character'
_SURROGATE = ('Malformed JSON: strings may not contain unpaired surrogates '
              '(\\ud800-\\udfff)')
_TOO_DEEP = 'Malformed JSON: nested more than %d levels deep' % MAX_JSON_DEPTH

#: The escapes that make a NUL or a surrogate: a backslash run of odd
#: length (an even one escapes itself) before ``u0000`` or ``uD800`` to
#: ``uDFFF``. Anchored at the start of a run, so each run is read once.
_ESCAPE = re.compile(r'(?<!\\)(\\+)u(0000|[dD][89a-fA-F][0-9a-fA-F]{2})')
#: A low surrogate's escape, the second half of a pair.
_LOW_SURROGATE = re.compile(r'\\u[dD][c-fC-F][0-9a-fA-F]{2}')
#: A JSON string (of a document that parsed).
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.S)
#: Bracket bytes as 2 (opening) or 0 (closing); other bytes are deleted.
_BRACKETS = bytes.maketrans(b'[{]}', b'\x02\x02\x00\x00')
_NOT_BRACKETS = bytes(set(range(256)) - set(b'[]{}'))


def _too_deep():
    return errors.BadRequest(_TOO_DEEP)


def _may_have_problems(text):
    """Whether the JSON document ``text`` (which parsed) may have a NUL
    character, an unpaired surrogate or nesting beyond MAX_JSON_DEPTH,
    from its text alone: a NUL or a surrogate in a string can only come
    from an escape (UTF-8 has no surrogates, JSON strings no raw control
    characters). Nothing the parsed document holds is missed; what a
    repeated key dropped may be seen."""
    if '\\' in text:
        paired = set()
        for match in _ESCAPE.finditer(text):
            if len(match.group(1)) % 2 == 0 or match.start() in paired:
                continue
            code = int(match.group(2), 16)
            if code == 0 or code >= 0xdc00 or not _LOW_SURROGATE.match(
                    text, match.end()):
                return True
            paired.add(match.end())
        outside_strings = _STRING.sub('', text)
    else:
        # No escapes: every other quote closes a string.
        outside_strings = ''.join(text.split('"')[::2])
    brackets = outside_strings.encode('ascii').translate(
        _BRACKETS, _NOT_BRACKETS)
    return bool(brackets) and max(map(
        operator.sub, itertools.accumulate(brackets),
        itertools.count(1))) > MAX_JSON_DEPTH


def check_values(text, data):
    """400 for nesting beyond MAX_JSON_DEPTH, and for strings (keys too)
    the database cannot store: a NUL character, or a lone surrogate (valid
    JSON as an escape, not encodable as UTF-8). ``data`` is ``text``
    parsed. The text shows at once that a body has none of these; one
    that may have some is walked, depth first, last item first, and the
    first problem met is reported."""
    if _may_have_problems(text):
        problem = _first_problem(data)
        if problem is not None:
            raise errors.BadRequest(problem)


def _first_problem(data):
    """The first problem a walk of ``data`` meets, or None: each container
    is met before what it holds, which is walked last item first (a dict's
    values, then its keys)."""
    if not isinstance(data, (dict, list)):
        return _string_problem(data)
    walking = [(reversed([*data.keys(), *data.values()]) if isinstance(
        data, dict) else reversed(data), 2)]
    while walking:
        items, depth = walking[-1]
        for value in items:
            if isinstance(value, str):
                problem = _string_problem(value)
                if problem is not None:
                    return problem
            elif isinstance(value, (dict, list)):
                if depth > MAX_JSON_DEPTH:
                    return _TOO_DEEP
                if value:
                    walking.append((reversed(
                        [*value.keys(), *value.values()] if isinstance(
                            value, dict) else value), depth + 1))
                    break
        else:
            walking.pop()
    return None


def _string_problem(value):
    if not isinstance(value, str):
        return None
    if '\x00' in value:
        return _NUL
    try:
        value.encode('utf-8')
    except UnicodeEncodeError:
        return _SURROGATE
    return None
