"""Make a difference's world as small as it can be while it stays.

First the request is tried alone after the build (most differences do
not need the requests before them); then the world's consumers, trees and
sharing providers are dropped one at a time, each drop kept when the
request still differs the same way (same status and same differing
parts of the answer).
"""

from tests.differential import world as worlds


def _signature(difference):
    """What makes two differences the same: both statuses and which parts
    differ."""
    parts = [difference.reference['status'], difference.lite['status']]
    for name in sorted(set(difference.reference['headers'])
                       | set(difference.lite['headers'])):
        if (difference.reference['headers'].get(name)
                != difference.lite['headers'].get(name)):
            parts.append(name)
    parts.append(difference.reference['body'] != difference.lite['body'])
    return tuple(parts)


def shrink(run, difference, count):
    """A difference like ``difference`` (from a run of ``count`` requests
    per world) in the smallest world found; ``difference`` itself when
    nothing smaller reproduces it."""
    wanted = _signature(difference)
    alone = difference.index >= 0

    def reproduces(drop):
        found = run.world(difference.seed, count, drop,
                          only=difference.index if alone else None)
        for candidate in found:
            if (candidate.index == difference.index
                    and _signature(candidate) == wanted):
                return candidate
        return None

    best = reproduces(frozenset())
    if best is None and alone:
        alone = False
        best = difference
    drop = frozenset()
    for part in worlds.generate(difference.seed).parts():
        smaller = reproduces(drop | {part})
        if smaller is not None:
            drop, best = drop | {part}, smaller
    return best
