"""``placement-lite capacity --chart FILE``: the share of each class's
capacity in use, as a bar chart (matplotlib: ``placement-lite[charts]``)."""

import matplotlib

matplotlib.use('Agg')

from matplotlib import pyplot  # noqa: E402 (after the backend is chosen)


def capacity(path, rows, by=None):
    """Write to ``path`` (its format by its name) a horizontal bar per row
    of the report (domain.capacity.Row): the part of its capacity used,
    labelled with the amounts."""
    labels = ['%s / %s' % (row.group, row.resource_class) if by
              else row.resource_class for row in rows]
    figure, axes = pyplot.subplots(
        figsize=(9, 1.2 + 0.4 * max(len(rows), 1)))
    try:
        positions = range(len(rows))
        axes.barh(positions, [100] * len(rows), color='#e0e0e0',
                  label='free')
        axes.barh(positions, [row.used_percent for row in rows],
                  color='#3a76af', label='used')
        for position, row in zip(positions, rows):
            axes.text(101, position, '%d of %d used' % (row.used,
                                                        row.capacity),
                      va='center', fontsize=8)
        axes.set_yticks(list(positions), labels)
        axes.invert_yaxis()
        axes.set_xlim(0, 135)
        axes.set_xticks([0, 25, 50, 75, 100])
        axes.set_xlabel('% of capacity ((total - reserved) x '
                        'allocation_ratio)')
        axes.set_title('Capacity used per resource class'
                       + (' and %s' % by if by else ''))
        axes.legend(loc='lower right', fontsize=8)
        figure.tight_layout()
        figure.savefig(path)
    finally:
        pyplot.close(figure)
