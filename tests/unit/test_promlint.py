"""tests/promlint.py says what promtool says, rule by rule: each
exposition here is linted in Python, and by promtool where it is
installed (tests/provision.py), which must find exactly the same
problems. The rules where promtool's versions differ, which the Python
lint takes at their strictest, are checked in Python only."""

import pytest

from tests import promlint

GOOD = '''\
# HELP placement_requests_total Requests answered.
# TYPE placement_requests_total counter
placement_requests_total{route="/resource_providers/{uuid}",method="GET"} 3
placement_requests_total{route="a \\"quoted\\" \\\\ route",method="GET"} 1
# HELP placement_request_duration_seconds Seconds to answer.
# TYPE placement_request_duration_seconds histogram
placement_request_duration_seconds_bucket{route="/",le="0.5"} 1
placement_request_duration_seconds_bucket{route="/",le="+Inf"} 2
placement_request_duration_seconds_count{route="/"} 2
placement_request_duration_seconds_sum{route="/"} 1.5
placement_request_duration_seconds_bucket{route="/traits",le="0.5"} 0
placement_request_duration_seconds_bucket{route="/traits",le="+Inf"} 0
placement_request_duration_seconds_count{route="/traits"} 0
placement_request_duration_seconds_sum{route="/traits"} 0
# HELP placement_read_seconds Seconds to read, by quantile.
# TYPE placement_read_seconds summary
placement_read_seconds{quantile="0.5"} 0.1
placement_read_seconds{quantile="0.9"} 0.3
placement_read_seconds_count 4
placement_read_seconds_sum 0.9
# HELP placement_inventory_total_amount Inventory total.
# TYPE placement_inventory_total_amount gauge
placement_inventory_total_amount{resource_class="VCPU"} 8 1700000000000
placement_inventory_total_amount{resource_class="MEMORY_MB"} NaN
'''


def _gauge(name, labels=''):
    return ('# HELP {0} Some gauge.\n# TYPE {0} gauge\n{0}{1} 1\n'
            .format(name, labels))


#: (exposition, the problems promtool finds in it), for rules every
#: version of promtool has.
CASES = {
    'good': (GOOD, []),
    'the gauge placement_lite named like a counter': (
        _gauge('placement_inventory_total', '{resource_class="VCPU"}'),
        [('placement_inventory_total',
          'non-counter metrics should not have "_total" suffix')]),
    'a counter without _total': (
        '# HELP placement_claims Claims.\n# TYPE placement_claims counter\n'
        'placement_claims 1\n',
        [('placement_claims', 'counter metrics should have "_total" '
          'suffix')]),
    'no help': (
        '# TYPE placement_claims_total counter\nplacement_claims_total 1\n',
        [('placement_claims_total', 'no help text')]),
    'untyped: only the help': (
        'placement_claims_total{le="1"} 1\n',
        [('placement_claims_total', 'no help text')]),
    'the suffixes and labels of histograms and summaries': (
        _gauge('placement_reads_bucket') + _gauge('placement_reads_count')
        + _gauge('placement_reads_sum')
        + _gauge('placement_reads', '{le="1",quantile="0.5"}'),
        [('placement_reads',
          'non-histogram metrics should not have "le" label'),
         ('placement_reads',
          'non-summary metrics should not have "quantile" label'),
         ('placement_reads_bucket',
          'non-histogram metrics should not have "_bucket" suffix'),
         ('placement_reads_count', 'non-histogram and non-summary metrics '
          'should not have "_count" suffix'),
         ('placement_reads_sum', 'non-histogram and non-summary metrics '
          'should not have "_sum" suffix')]),
    'units that are not base units': (
        _gauge('placement_read_milliseconds') + _gauge('placement_read_hours')
        + _gauge('placement_pool_kilobytes') + _gauge('placement_sent_bits'),
        [('placement_pool_kilobytes',
          'use base unit "bytes" instead of "kilobytes"'),
         ('placement_read_hours',
          'use base unit "seconds" instead of "hours"'),
         ('placement_read_milliseconds',
          'use base unit "seconds" instead of "milliseconds"'),
         ('placement_sent_bits', 'use base unit "bytes" instead of "bits"')]),
    'abbreviated units': (
        _gauge('placement_read_ms') + _gauge('placement_pool_mb_free')
        + _gauge('placement_read_s'),
        [('placement_pool_mb_free',
          'metric names should not contain abbreviated units'),
         ('placement_read_ms',
          'metric names should not contain abbreviated units'),
         ('placement_read_s',
          'metric names should not contain abbreviated units')]),
    "the family's type in its name": (
        _gauge('placement_pool_gauge'),
        [('placement_pool_gauge',
          "metric name should not include type 'gauge'")]),
    'a colon': (
        _gauge('placement:capacity_used_ratio'),
        [('placement:capacity_used_ratio',
          "metric names should not contain ':'")]),
    'camelCase, in a name and in labels, once per series': (
        _gauge('placement_inventoryUsed', '{resourceClass="VCPU"}')
        + 'placement_inventoryUsed{resourceClass="PCPU"} 2\n',
        [('placement_inventoryUsed', "label names should be written in "
          "'snake_case' not 'camelCase'")] * 2 + [
         ('placement_inventoryUsed', "metric names should be written in "
          "'snake_case' not 'camelCase'")]),
}

#: (exposition, the problems the Python lint finds in it), for the rules
#: it takes from one version of promtool and not another.
STRICTER = {
    "another type's name (2.42)": (
        '# HELP placement_gauge_reads_total Reads.\n'
        '# TYPE placement_gauge_reads_total counter\n'
        'placement_gauge_reads_total 1\n',
        [('placement_gauge_reads_total',
          "metric name should not include type 'gauge'")]),
    'units of the newer table': (
        _gauge('placement_supply_millivolts') + _gauge('placement_up_weeks')
        + _gauge('placement_room_kelvins'),
        [('placement_room_kelvins',
          'use base unit "kelvin" instead of "kelvins"'),
         ('placement_supply_millivolts',
          'use base unit "volts" instead of "millivolts"'),
         ('placement_up_weeks', 'use base unit "seconds" instead of "weeks"')
         ]),
    'units of the older table are base units': (
        _gauge('placement_light_candela') + _gauge('placement_gas_moles'), []),
    'a series twice (newer)': (
        _gauge('placement_pool', '{pool="read"}')
        + 'placement_pool{pool="read"} 2\nplacement_pool{pool="write"} 0\n',
        [('placement_pool', 'metric not unique')]),
    'an empty help': (
        '# HELP placement_pool \n# TYPE placement_pool gauge\n'
        'placement_pool 1\n',
        [('placement_pool', 'no help text')]),
}


@pytest.mark.parametrize('text, problems', [
    pytest.param(*case, id=name)
    for name, case in {**CASES, **STRICTER}.items()])
def test_the_python_lint(text, problems):
    assert promlint.lint(text) == problems


@pytest.mark.needs('promtool')
@pytest.mark.parametrize('text, problems', [
    pytest.param(*case, id=name) for name, case in CASES.items()])
def test_promtool_finds_the_same(text, problems):
    assert promlint.promtool(text) == problems


def test_a_histogram_owns_its_samples():
    [requests, duration, read, inventory] = promlint.families(GOOD)
    assert (requests.name, requests.type, requests.series) == (
        'placement_requests_total', 'counter',
        [{'route': '/resource_providers/{uuid}', 'method': 'GET'},
         {'route': 'a \\"quoted\\" \\\\ route', 'method': 'GET'}])
    assert (duration.type, duration.series) == (
        'histogram', [{'route': '/'}, {'route': '/traits'}])
    assert (read.type, read.series) == ('summary', [{}])
    assert (inventory.help, inventory.series) == (
        'Inventory total.', [{'resource_class': 'VCPU'},
                             {'resource_class': 'MEMORY_MB'}])


@pytest.mark.parametrize('line', [
    'placement_claims_total{outcome=claimed} 1',
    'placement_claims_total{outcome="claimed"',
    'placement_claims_total one',
    '# TYPE placement_claims_total counting',
    '# HELP 1placement text'])
def test_what_is_not_the_text_format_is_refused(line):
    with pytest.raises(ValueError):
        promlint.lint(line + '\n')
