"""What the query reports of several cloud sizes say together: the chart
of p50 and memory against hosts, and where placement_lite stands against
the region-scale goals (issue 33). Only allocation-candidates queries,
their explain variants left out, count for the goals: they are the
engine's."""

import urllib.parse

import matplotlib
matplotlib.use('Agg')  # before pyplot: no display
from matplotlib import pyplot  # noqa: E402
from matplotlib import ticker  # noqa: E402


CHART = 'bench-scaling.png'
QUERIES_CHART = 'bench-queries.png'
#: Goals at the largest size: seconds, or a factor.
LIMIT_1000_P50, LIMIT_50_P50, BOUNDED_P50 = 0.100, 0.030, 0.200
UNBOUNDED_RATIO = 10
RSS_KB = 1.5 * 1024 * 1024
FIRST_REQUEST = 5.0
FLAT = 1.3
SMALLEST_TO_ROOT = 2.5
SMALLEST = ('in_tree', 'none_fits')


def is_candidates(entry):
    return (entry['path'].startswith('/allocation_candidates')
            and not entry.get('explains'))


def is_bounded(entry):
    query = urllib.parse.urlsplit(entry['path']).query
    return 'limit' in urllib.parse.parse_qs(query)


def p50(entry, service='placement_lite'):
    """The service's p50 in seconds; None when it was not timed."""
    result = (entry or {}).get(service)
    if not result or result['status'] != 200 or not result['samples']:
        return None
    return result['p50']


def _candidates(report, bounded):
    return [entry for entry in report['queries']
            if is_candidates(entry) and is_bounded(entry) == bounded]


def _largest_worker(report, service):
    workers = report.get('memory', {}).get(service) or []
    return max(workers) if workers else None


def chart(reports, path):
    """A PNG at ``path``: p50 of the bounded and the unbounded candidates
    queries against hosts, placement_lite's lines solid and the
    reference's dashed (its timeouts left out), and the largest worker's
    resident memory against hosts."""
    hosts = [report['hosts'] for report in reports]
    figure, axes = pyplot.subplots(1, 3, figsize=(16, 5.2))
    for axis, bounded, title in (
            (axes[0], True, 'bounded candidates queries (limit=...)'),
            (axes[1], False, 'unbounded candidates queries')):
        names = [entry['name'] for entry in _candidates(reports[-1], bounded)]
        colors = pyplot.get_cmap('tab10' if len(names) <= 10 else 'tab20')
        for index, name in enumerate(names):
            for service, style in (('placement_lite', '-'),
                                   ('reference', '--')):
                points = [(report['hosts'], p50(_named(report, name), service))
                          for report in reports]
                points = [(x, 1000 * y) for x, y in points if y is not None]
                if points:
                    axis.plot(*zip(*points), style, marker='o',
                              color=colors(index),
                              label=name if service == 'placement_lite'
                              else None)
        axis.set(xscale='log', yscale='log', xlabel='compute hosts',
                 ylabel='p50 (ms)', title=title)
        axis.grid(True, which='both', alpha=0.3)
        axis.legend(fontsize=7, title='solid: placement_lite, '
                    'dashed: reference', title_fontsize=7)
    for service, style in (('placement_lite', '-'), ('reference', '--')):
        points = [(report['hosts'], _largest_worker(report, service))
                  for report in reports]
        points = [(x, y / 1024) for x, y in points if y is not None]
        if points:
            axes[2].plot(*zip(*points), style, marker='o', label=service)
    axes[2].axhline(RSS_KB / 1024, color='grey', linestyle=':',
                    label='goal: 1.5 GB')
    axes[2].set(xscale='log', xlabel='compute hosts',
                ylabel='largest worker RSS (MB)',
                title='memory of a worker after the queries')
    axes[2].grid(True, which='both', alpha=0.3)
    axes[2].legend(fontsize=8)
    for axis in axes:
        axis.set_xticks(hosts, ['{:,}'.format(count) for count in hosts])
        axis.xaxis.set_minor_locator(ticker.NullLocator())
    figure.tight_layout()
    figure.savefig(path, dpi=80)
    pyplot.close(figure)


def queries_chart(reports, path):
    """A PNG at ``path``: for each cloud size, the p50 of every query both
    services answer (explain variants are placement_lite's alone), a bar
    each, placement_lite's and the reference's side by side on a log
    scale; a query the reference did not answer in time is drawn at the
    timeout, hatched."""
    names = [entry['name'] for entry in reports[-1]['queries']
             if not entry.get('explains')]
    figure, axes = pyplot.subplots(
        1, len(reports), figsize=(4.2 * len(reports), 0.24 * len(names) + 2),
        sharey=True, squeeze=False)
    positions = range(len(names))
    for axis, report in zip(axes[0], reports):
        timeout = report['timeout']
        for service, offset, color in (('placement_lite', -0.2, '#3a76af'),
                                       ('reference', 0.2, '#d9822b')):
            entries = [_named(report, name) for name in names]
            taken = [p50(entry, service) for entry in entries]
            timed_out = [((entry or {}).get(service) or {}).get('status')
                         == 'timeout' for entry in entries]
            axis.barh([position + offset for position in positions],
                      [1000 * (timeout if late else seconds or 0)
                       for seconds, late in zip(taken, timed_out)],
                      height=0.4, color=color, label=service)
            late = [position for position, is_late
                    in zip(positions, timed_out) if is_late]
            axis.barh([position + offset for position in late],
                      [1000 * timeout] * len(late), height=0.4,
                      color='white', edgecolor=color, hatch='///',
                      label='%s: timeout (%.0f s)' % (service, timeout)
                      if late else None)
        axis.set(xscale='log', xlabel='p50 (ms)',
                 title='{:,} compute hosts'.format(report['hosts']))
        axis.grid(True, axis='x', which='both', alpha=0.3)
    axes[0][0].set_yticks(list(positions), names, fontsize=8)
    axes[0][0].invert_yaxis()
    handles = {}
    for axis in axes[0]:
        for handle, label in zip(*axis.get_legend_handles_labels()):
            handles.setdefault(label, handle)
    figure.legend(handles.values(), handles.keys(), loc='upper center',
                  ncol=len(handles), fontsize=8)
    figure.tight_layout(rect=(0, 0, 1, 0.97))
    figure.savefig(path, dpi=80)
    pyplot.close(figure)


def _named(report, name):
    for entry in report['queries']:
        if entry['name'] == name:
            return entry
    return None


def _ms(seconds):
    return '%.0f ms' % (1000 * seconds) if seconds < 10 else '%.1f s' % seconds


def goals(reports):
    """[(goal, where placement_lite stands, met: True, False or None when
    not measured)], ``reports`` ordered by hosts, the goals at one size
    taken at the largest."""
    last = reports[-1]
    at = ' at %s hosts' % '{:,}'.format(last['hosts'])
    rows = []

    nova = _named(last, 'nova_flavor')
    if p50(nova) is not None:
        hosts = nova['placement_lite'].get('hosts')
        rows.append(("nova's flavor, limit=1000: p50 <= 100 ms with 1,000 "
                     'distinct hosts' + at, '%s, %s hosts' % (
                         _ms(p50(nova)), hosts),
                     p50(nova) <= LIMIT_1000_P50 and hosts == 1000))
    nova50 = _named(last, 'nova_flavor_50')
    if p50(nova50) is not None:
        rows.append(("nova's flavor, limit=50: p50 <= 30 ms" + at,
                     _ms(p50(nova50)), p50(nova50) <= LIMIT_50_P50))

    bounded = [(p50(entry), entry['name'])
               for entry in _candidates(last, True) if p50(entry)]
    if bounded:
        slowest = max(bounded)
        rows.append(('every bounded query: p50 <= 200 ms' + at,
                     'slowest: %s %s' % (slowest[1], _ms(slowest[0])),
                     slowest[0] <= BOUNDED_P50))

    ratios = []
    for entry in _candidates(last, False):
        reference = (entry.get('reference') or {}).get('status')
        if p50(entry) is None or reference is None:
            continue
        if reference == 'timeout':
            ratios.append((float('inf'), entry['name']))
        elif p50(entry, 'reference'):
            ratios.append((p50(entry, 'reference') / p50(entry),
                           entry['name']))
    if ratios:
        lowest = min(ratios)
        rows.append(('every unbounded query: >= 10x the reference, or the '
                     'reference past the timeout' + at,
                     'lowest: %s %.1fx' % (lowest[1], lowest[0]),
                     lowest[0] >= UNBOUNDED_RATIO))

    rss = _largest_worker(last, 'placement_lite')
    if rss:
        rows.append(("each worker's RSS <= 1.5 GB" + at,
                     'largest: %.0f MB' % (rss / 1024), rss <= RSS_KB))

    rows += _scaling_goals(reports)

    first = [(seconds, name) for name, results
             in (last.get('first_requests') or {}).items()
             for seconds in [results.get('placement_lite')]
             if isinstance(seconds, float)]
    if first:
        slowest = max(first)
        rows.append(('the first request after a worker starts <= 5 s' + at,
                     'slowest: %s %s' % (slowest[1], _ms(slowest[0])),
                     slowest[0] <= FIRST_REQUEST))

    multiples = []
    for report in reports:
        root = p50(_named(report, 'root'))
        for name in SMALLEST:
            taken = p50(_named(report, name))
            if root and taken:
                multiples.append((taken / root, name, report['hosts']))
    if multiples:
        worst = max(multiples)
        rows.append(('in_tree and none_fits: p50 <= 2.5x GET / at every size',
                     'worst: %s %.1fx at %s hosts' % (worst[1], worst[0],
                                                      '{:,}'.format(worst[2])),
                     worst[0] <= SMALLEST_TO_ROOT))
    return rows


def _growth(reports, bounded, steps):
    """(growth of p50 / what is allowed, query, from, to) for each
    candidates query and each pair of sizes in ``steps``: bounded queries
    may grow 30%, unbounded ones as the hosts do."""
    found = []
    for smaller, larger in steps:
        for entry in _candidates(larger, bounded):
            before = p50(_named(smaller, entry['name']))
            if before and p50(entry):
                allowed = FLAT if bounded else larger['hosts'] / smaller[
                    'hosts']
                found.append((p50(entry) / before / allowed, entry['name'],
                              smaller, larger, p50(entry) / before))
    return found


def _first(item):
    return item[0]


def _scaling_goals(reports):
    if len(reports) < 2:
        return []
    first, last = reports[0], reports[-1]
    span = '%s to %s hosts' % ('{:,}'.format(first['hosts']),
                               '{:,}'.format(last['hosts']))
    rows = []
    flat = _growth(reports, True, [(first, last)])
    if flat:
        worst = max(flat, key=_first)
        rows.append(('bounded queries flat within 30%, ' + span,
                     'worst: %s %.2fx' % (worst[1], worst[4]),
                     worst[0] <= 1))
    linear = _growth(reports, False, list(zip(reports, reports[1:])))
    if linear:
        worst = max(linear, key=_first)
        rows.append(('unbounded queries no worse than linear, ' + span,
                     'worst: %s %.1fx for %.1fx the hosts (%s to %s)' % (
                         worst[1], worst[4],
                         worst[3]['hosts'] / worst[2]['hosts'],
                         '{:,}'.format(worst[2]['hosts']),
                         '{:,}'.format(worst[3]['hosts'])),
                     worst[0] <= 1))
    return rows


def goals_table(reports):
    rows = goals(reports)
    if not rows:
        return ''
    mark = {True: 'met', False: '**missed**', None: '-'}
    return '\n'.join(['| goal | placement_lite | |', '|---|---|---|'] + [
        '| %s | %s | %s |' % (goal, stands, mark[met])
        for goal, stands, met in rows])
