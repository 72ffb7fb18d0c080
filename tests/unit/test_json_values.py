"""A body's strings and nesting are refused as a walk of the parsed body
finds them: NUL characters, unpaired surrogates, nesting deeper than
MAX_JSON_DEPTH (handlers.util walks only a body whose text shows one)."""

import json

from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
import pytest

from placement_lite import errors
from placement_lite import request_json

#: JSON strings whose escapes make (or only look like they make) a NUL or
#: a surrogate: escaped backslashes, pairs, halves of pairs.
STRINGS = ['"a"', r'"\u0000"', r'"\ud800"', r'"\uDC00"', r'"\ud800\udc00"',
           r'"\\u0000"', r'"\\\u0000"', r'"x\ud83d\ude00y"',
           r'"\ud800\ud800"', r'"\ud800\u0000"', r'"\\\\ud800"',
           r'"\udbff\\udfff"', '"[{"', r'"\\"', '"\u2603"']


def _nested(children):
    return st.one_of(
        st.lists(children, max_size=3).map(lambda items: '[%s]' % ','.join(
            items)),
        st.lists(st.tuples(st.sampled_from(STRINGS), children),
                 max_size=3).map(lambda pairs: '{%s}' % ','.join(
                     '%s:%s' % pair for pair in pairs)))


DOCUMENTS = st.recursive(st.sampled_from(STRINGS + ['1', 'null']), _nested,
                         max_leaves=12)


def _deepened(document, depth):
    return '[' * depth + document + ']' * depth


def _first_met(data):
    """The problem the body check reports: the first a walk meets, with
    a stack of the values still to see (the last pushed seen first)."""
    pending = [(data, 1)]
    while pending:
        value, depth = pending.pop()
        if isinstance(value, str):
            if '\x00' in value:
                return request_json._NUL
            try:
                value.encode('utf-8')
            except UnicodeEncodeError:
                return request_json._SURROGATE
        elif isinstance(value, (dict, list)):
            if depth > request_json.MAX_JSON_DEPTH:
                return request_json._TOO_DEEP
            items = [*value.keys(), *value.values()] if isinstance(
                value, dict) else value
            pending.extend((item, depth + 1) for item in items)
    return None


def _reported(text):
    try:
        request_json.check_values(text, json.loads(text))
    except errors.BadRequest as exc:
        return str(exc)
    return None


@pytest.mark.slow
@settings(max_examples=2000, deadline=None, database=None)
@given(DOCUMENTS, st.integers(0, 40), st.sampled_from([None, 0, 1, 2]))
def test_the_problem_a_walk_meets_first_is_reported(document, depth,
                                                    deep_sibling):
    if deep_sibling is not None:
        document = '[%s,%s]' % (document, _deepened(
            STRINGS[deep_sibling], 30 + deep_sibling))
    text = _deepened(document, depth)
    assert _reported(text) == _first_met(json.loads(text))


@pytest.mark.parametrize('text,message', [
    ('[[],[],"\\u0000"]', request_json._NUL),
    ('["\\u0000","\\ud800"]', request_json._SURROGATE),
    ('["\\ud800","\\u0000"]', request_json._NUL),
    ('{"\\u0000":"\\ud800"}', request_json._SURROGATE),
    ('[%s,"\\u0000"]' % _deepened('1', 33), request_json._NUL),
    ('["\\u0000",%s]' % _deepened('1', 33), request_json._TOO_DEEP),
])
def test_the_first_problem_a_walk_meets_is_reported(text, message):
    """With problems of several kinds, the last item's come first and a
    dict's values before its keys."""
    assert _reported(text) == message


def test_a_value_a_repeated_key_dropped_is_no_problem():
    assert _reported('{"a":"\\u0000","a":"b"}') is None
