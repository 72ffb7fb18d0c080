"""pretty.pformat writes a JSON value as pprint.pformat(value, width=72,
sort_dicts=False) does."""

import pprint

from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
import pytest

from placement_lite import pretty

#: Pieces of text whose repr is longer than they are, or that cut lines
#: and words where pprint cuts them.
PIECES = ['a', 'bb', ' ', '  ', '\n', "'", '"', '\\', 'x' * 30, 'y' * 80,
          '\t', '\u2603', ' \n ', '\r\n', 'VCPU', '\x85', '\u2028', '\x0b']
TEXT = st.one_of(st.lists(st.sampled_from(PIECES), max_size=40).map(''.join),
                 st.text(max_size=100))
SCALARS = st.one_of(TEXT, st.integers(), st.floats(allow_nan=False),
                    st.booleans(), st.none())
VALUES = st.recursive(SCALARS, lambda children: st.one_of(
    st.lists(children, max_size=6),
    st.dictionaries(TEXT, children, max_size=6)), max_leaves=40)


#: 300 random values reach every branch of pretty.py but one, which
#: test_long_and_wide_values takes: generating them is what takes time.
@pytest.mark.slow
@settings(max_examples=300, deadline=None, database=None)
@given(VALUES)
def test_the_text_of_pprint(value):
    assert pretty.pformat(value) == pprint.pformat(value, width=72,
                                                   sort_dicts=False)


def test_long_and_wide_values():
    """Including a line whose words' reprs outgrow them (tabs), cut below
    the first guess of where its pieces end."""
    for value in ([0] * 2000, [[]] * 2000, {'K%d' % i: [i] for i in range(500)},
                  'a ' * 5000, '\n' * 500, ['x' * 100] * 50,
                  {'k': {'l': ['m' * 70, 'n o ' * 40]}}, 'a\tb ' * 90):
        assert pretty.pformat(value) == pprint.pformat(value, width=72,
                                                       sort_dicts=False)
