"""``pprint.pformat(value, width=72, sort_dicts=False)`` of a JSON value
(what jsonschema's error messages show of a schema and of the part of a
body that breaks it), the same text in time linear in it.

pprint makes the text item by item in Python, and rebuilds each item's
repr() in Python at every level it is nested in: 0.8 s for a 1 MiB list
of numbers, 0.4 s for a 1 MiB string of words. Here the reprs are
builtin repr() of whole runs of items, joined at once; only the items too
long for their line are laid out one by one, as pprint lays them out.
"""

import bisect
import itertools
import operator
import re

WIDTH = 72

#: Where a line is cut into words (pprint's ``\S*\s*`` pieces).
_WORD_START = re.compile(r'(?<=\s)(?=\S)')


def pformat(value):
    out = []
    _format(value, repr(value), out, 0, 0, 0)
    return ''.join(out)


def _format(value, rep, out, indent, allowance, level):
    """pprint's PrettyPrinter._format; ``rep`` is repr(value)."""
    if len(rep) <= WIDTH - indent - allowance:
        out.append(rep)
    elif isinstance(value, dict):
        out.append('{')
        if value:
            _dict_items(value, out, indent, allowance + 1, level + 1)
        out.append('}')
    elif isinstance(value, list):
        out.append('[')
        if value:
            _items(value, out, indent, allowance + 1, level + 1)
        out.append(']')
    elif isinstance(value, str):
        _string(value, rep, out, indent, allowance, level + 1)
    else:
        out.append(rep)


def _too_long(lengths, room, last_room):
    """Indexes of the items whose text is longer than ``room``
    (``last_room`` for the last item)."""
    lengths = list(lengths)
    last = len(lengths) - 1
    found = list(itertools.compress(range(last), map(room.__lt__, lengths)))
    if lengths[last] > last_room:
        found.append(last)
    return found


def _laid_out(value, rep, indent, allowance, level):
    out = []
    _format(value, rep, out, indent, allowance, level)
    return ''.join(out)


def _items(values, out, indent, allowance, level):
    """pprint's _format_items (not compact): one item a line."""
    indent += 1
    reps = list(map(repr, values))
    last = len(values) - 1
    for index in _too_long(map(len, reps), WIDTH - indent - 1,
                           WIDTH - indent - allowance):
        reps[index] = _laid_out(values[index], reps[index], indent,
                                allowance if index == last else 1, level)
    out.append((',\n' + ' ' * indent).join(reps))


def _dict_items(mapping, out, indent, allowance, level):
    """pprint's _format_dict_items: ``key: value`` a line, the value laid
    out after its key."""
    indent += 1
    keys = list(map(repr, mapping))
    values = list(mapping.values())
    reps = list(map(repr, values))
    last = len(values) - 1
    lengths = map(operator.add, map(len, keys), map(len, reps))
    for index in _too_long(lengths, WIDTH - indent - 3,
                           WIDTH - indent - 2 - allowance):
        reps[index] = _laid_out(values[index], reps[index],
                                indent + len(keys[index]) + 2,
                                allowance if index == last else 1, level)
    out.append((',\n' + ' ' * indent).join(
        map(''.join, zip(keys, itertools.repeat(': '), reps))))


def _string(value, rep, out, indent, allowance, level):
    """pprint's _pprint_str: a string too long for its line, cut into
    lines (at its own line ends, then between words), each a repr."""
    if not value:
        out.append(rep)
        return
    lines = value.splitlines(True)
    if level == 1:
        indent += 1
        allowance += 1
    reps = list(map(repr, lines))
    last = len(lines) - 1
    chunks = 0
    for index in _too_long(map(len, reps), WIDTH - indent,
                           WIDTH - indent - allowance):
        cut = _cut_line(lines[index], WIDTH - indent,
                        allowance if index == last else 0)
        chunks += len(cut) - 1
        reps[index] = ('\n' + ' ' * indent).join(cut)
    if len(reps) + chunks == 1:
        out.append(reps[0])
        return
    text = ('\n' + ' ' * indent).join(reps)
    out.append('(%s)' % text if level == 1 else text)


def _cut_line(line, room, last_allowance):
    """The reprs of the pieces pprint cuts ``line`` into: as many words as
    fit in ``room`` each (the last word of the line in ``room -
    last_allowance``), a word longer than that on its own."""
    words = _WORD_START.split(line)
    ends = list(itertools.accumulate(map(len, words)))
    last = len(words) - 1

    def fits(start, end):
        """Whether words[start..end] fit (their repr)."""
        begin = ends[start - 1] if start else 0
        limit = room - (last_allowance if end == last else 0)
        return len(repr(line[begin:ends[end]])) <= limit

    chunks = []
    start = 0
    while start <= last:
        # A piece takes its first word whatever its length, then the
        # words that still fit. A repr is two characters longer than its
        # text, or more: none fits that ends beyond ``room - 2``
        # characters on, and usually the last that does not fits.
        begin = ends[start - 1] if start else 0
        low = start
        high = bisect.bisect_right(ends, begin + room - 2, lo=start)
        if high - 1 > low and fits(start, high - 1):
            low = high - 1
        while high - low > 1:
            middle = (low + high) // 2
            if fits(start, middle):
                low = middle
            else:
                high = middle
        chunks.append(repr(line[begin:ends[low]]))
        start = low + 1
    return chunks
