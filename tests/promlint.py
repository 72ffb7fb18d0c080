"""promtool's ``check metrics`` in Python, and promtool itself.

:func:`lint` applies to a Prometheus text exposition the rules promtool
applies (its linter is prometheus/client_golang's
``prometheus/testutil/promlint``: as built into promtool 2.42, Debian 12's,
and as its ``validations`` are since), in promtool's words, so that the
names placement_lite exposes are checked where promtool is missing too.
Where the versions differ it takes the stricter rule:

- a name naming any metric type (2.42: ``placement_gauge_total`` is
  refused although a counter; later versions refuse only the family's own
  type);
- the units of both versions' tables (volts and weeks of the newer,
  candela and moles of the older; kelvins, rankine as the newer says);
- duplicate series (``metric not unique``: newer versions only);
- an empty HELP text counts as none (promtool refuses only a missing one).

:func:`promtool` runs the real one (tests/provision.py installs Debian's
``prometheus`` package for it) and returns its problems the same way.
"""

import collections
import re
import subprocess

import pytest

from tests import provision

NAME = re.compile(r'[a-zA-Z_:][a-zA-Z0-9_:]*$')
SAMPLE = re.compile(r'([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?'
                    r'\s+(\S+)(?:\s+-?\d+)?$')
LABEL = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*=\s*"((?:[^"\\]|\\.)*)"'
                   r'\s*(?:,|$)')
TYPES = ('counter', 'gauge', 'histogram', 'summary', 'untyped')
#: The samples of a family besides its own name, by type.
SUFFIXES = {'histogram': ('_bucket', '_count', '_sum'),
            'summary': ('_count', '_sum')}
#: The label a histogram's (a summary's) samples carry besides their
#: series': the same series has a sample per value of it.
SERIES_LABEL = {'histogram': 'le', 'summary': 'quantile'}

#: Each unit promtool knows, and the base unit to use instead.
UNITS = {
    'amperes': 'amperes', 'bytes': 'bytes', 'candela': 'candela',
    'celsius': 'celsius', 'grams': 'grams', 'joules': 'joules',
    'kelvin': 'kelvin', 'meters': 'meters', 'metres': 'metres',
    'moles': 'moles', 'seconds': 'seconds', 'volts': 'volts',
    'minutes': 'seconds', 'hours': 'seconds', 'days': 'seconds',
    'weeks': 'seconds', 'kelvins': 'kelvin', 'fahrenheit': 'celsius',
    'rankine': 'celsius', 'inches': 'meters', 'yards': 'meters',
    'miles': 'meters', 'bits': 'bytes', 'calories': 'joules',
    'pounds': 'grams', 'ounces': 'grams'}
UNIT_PREFIXES = ('pico', 'nano', 'micro', 'milli', 'centi', 'deci', 'deca',
                 'hecto', 'kilo', 'kibi', 'mega', 'mibi', 'giga', 'gibi',
                 'tera', 'tebi', 'peta', 'pebi')
UNIT_ABBREVIATIONS = ('s', 'ms', 'us', 'ns', 'sec', 'b', 'kb', 'mb', 'gb',
                      'tb', 'pb', 'm', 'h', 'd')
CAMEL_CASE = re.compile(r'[a-z][A-Z]')


class Family:
    """A metric family as promtool reads it: its name as the exposition's
    TYPE line gives it (a counter's with ``_total``), and its series, each
    a dict of labels."""

    def __init__(self, name, type_='untyped'):
        self.name = name
        self.type = type_
        self.help = None
        self.series = []

    def owns(self, sample_name):
        return sample_name == self.name or sample_name in (
            self.name + suffix for suffix in SUFFIXES.get(self.type, ()))

    def add(self, labels):
        """Each sample of a counter, gauge or untyped family is a series of
        its own; a histogram's (summary's) samples of one label set, their
        ``le`` (``quantile``) aside, are one series."""
        if self.type not in SERIES_LABEL:
            self.series.append(labels)
            return
        series = {name: value for name, value in labels.items()
                  if name != SERIES_LABEL[self.type]}
        if series not in self.series:
            self.series.append(series)


def families(text):
    """The Families of the exposition ``text``, in order; ValueError for a
    line that is not of the text format."""
    found = []

    def family(name):
        if not found or found[-1].name != name:
            found.append(Family(name))
        return found[-1]

    for line in text.splitlines():
        words = line.split(None, 3)
        if not words:
            continue
        if words[0] == '#':
            if len(words) < 3 or words[1] not in ('HELP', 'TYPE'):
                continue
            if not NAME.match(words[2]):
                raise ValueError('not a metric name: %r' % line)
            if words[1] == 'HELP':
                family(words[2]).help = words[3] if len(words) > 3 else ''
            elif len(words) == 4 and words[3] in TYPES:
                family(words[2]).type = words[3]
            else:
                raise ValueError('not a metric type: %r' % line)
            continue
        sample = SAMPLE.match(line)
        if sample is None:
            raise ValueError('not a sample: %r' % line)
        name, labels, value = sample.groups()
        float(value)
        owner = next((known for known in reversed(found)
                      if known.owns(name)), None) or family(name)
        owner.add(_labels(labels or '', line))
    return found


def _labels(text, line):
    labels = {}
    position = 0
    while position < len(text.rstrip()):
        label = LABEL.match(text, position)
        if label is None:
            raise ValueError('labels not of the text format: %r' % line)
        labels[label.group(1)] = label.group(2)
        position = label.end()
    return labels


def lint(text):
    """The problems of the exposition ``text``, sorted: (metric family
    name, promtool's words), one for each time promtool says it."""
    return sorted((family.name, problem) for family in families(text)
                  for problem in problems(family))


def problems(family):
    """What promtool says of one Family."""
    found = []
    name = family.name
    lower = name.lower()
    if not family.help:
        found.append('no help text')
    unit = _unit(name)
    base = unit and UNITS[_unprefixed(unit)]
    if base != unit:
        found.append('use base unit "%s" instead of "%s"' % (base, unit))
    total = name.endswith('_total')
    if family.type == 'counter' and not total:
        found.append('counter metrics should have "_total" suffix')
    elif family.type not in ('counter', 'untyped') and total:
        found.append('non-counter metrics should not have "_total" suffix')
    if family.type != 'untyped':
        found += _reserved_by_histograms(family)
    for type_ in TYPES[:-1]:
        if _has_word(lower, type_):
            found.append("metric name should not include type '%s'" % type_)
    if ':' in name:
        found.append("metric names should not contain ':'")
    if CAMEL_CASE.search(name):
        found.append("metric names should be written in 'snake_case' not "
                     "'camelCase'")
    found += ["label names should be written in 'snake_case' not "
              "'camelCase'" for labels in family.series for label in labels
              if CAMEL_CASE.search(label)]
    found += ['metric names should not contain abbreviated units'
              for abbreviation in UNIT_ABBREVIATIONS
              if _has_word(lower, abbreviation)]
    counts = collections.Counter(frozenset(labels.items())
                                 for labels in family.series)
    found += ['metric not unique'
              for count in counts.values() for _i in range(count - 1)]
    return found


def _reserved_by_histograms(family):
    histogram = family.type == 'histogram'
    summary = family.type == 'summary'
    found = []
    if not histogram and family.name.endswith('_bucket'):
        found.append('non-histogram metrics should not have "_bucket" '
                     'suffix')
    for suffix in ('_count', '_sum'):
        if not (histogram or summary) and family.name.endswith(suffix):
            found.append('non-histogram and non-summary metrics should not '
                         'have "%s" suffix' % suffix)
    for labels in family.series:
        if not histogram and 'le' in labels:
            found.append('non-histogram metrics should not have "le" label')
        if not summary and 'quantile' in labels:
            found.append('non-summary metrics should not have "quantile" '
                         'label')
    return found


def _has_word(lower_name, word):
    """Whether ``word`` is one of the name's ``_``-separated words after
    its first (promtool: contains ``_word_`` or ends with ``_word``)."""
    return '_%s_' % word in lower_name or lower_name.endswith('_' + word)


def _unit(name):
    """The first word of ``name`` that is a unit, prefixed or not."""
    for word in name.split('_'):
        if _unprefixed(word) in UNITS:
            return word
    return None


def _unprefixed(word):
    if word in UNITS:
        return word
    for prefix in UNIT_PREFIXES:
        if word.startswith(prefix) and word[len(prefix):] in UNITS:
            return word[len(prefix):]
    return word


def promtool(text):
    """The problems ``promtool check metrics`` finds in ``text``, as
    :func:`lint` gives them; AssertionError when it fails otherwise."""
    done = subprocess.run(
        [provision.require('promtool')['promtool'], 'check', 'metrics'],
        input=text, capture_output=True, text=True, timeout=60)
    # 3: lint problems found (on standard error, a line each: the
    # family's name, a space, the problem).
    assert done.returncode in (0, 3), done
    assert (done.returncode == 3) == bool(done.stderr), done
    return sorted(tuple(line.split(' ', 1))
                  for line in done.stderr.splitlines())


#: Both, as a test's ``linter`` parameter: promtool's skipped where it is
#: missing, naming it.
LINTERS = [pytest.param(lint, id='python'),
           pytest.param(promtool, id='promtool',
                        marks=pytest.mark.needs('promtool'))]
