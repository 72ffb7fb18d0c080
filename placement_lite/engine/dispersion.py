"""Dispersion: schedulers asking the same together get different
near-best answers (``[placement] allocation_candidates_dispersion``).

nova's scheduler weighs the candidates it gets and claims the best host.
When every scheduler gets the best ``limit`` candidates of the cloud in
the same order, they all claim the same host, and all but one are
refused. With a dispersion of D, the answer to a ranked request leaves
out every candidate of its n best trees, n from 0 to D (its offset), and
holds the next ``limit`` candidates: each scheduler's best is another of
the cloud's D + 1 best hosts (engine.ranked_search).

The offsets of the requests of one shape (the query but for ``limit``)
follow each other in a process by a stride of about (D + 1) / phi, from a
point picked at random (or from ``allocation_candidates_dispersion_seed``),
so consecutive requests start far apart and every offset comes once in
D + 1 requests: the workers of a service each start at their own point,
as kube-scheduler starts each cycle at another node.
"""

import math
import random
import weakref

from placement_lite.db.cloud import keys

#: {engine: {shape: (next request's number, first offset, stride)}}.
_TURNS = weakref.WeakKeyDictionary()
#: Shapes whose turns are kept, per database.
SHAPES_KEPT = 512
_PHI = (1 + math.sqrt(5)) / 2


def stride(count):
    """A step through ``count`` offsets that comes back to its start only
    after all of them: the integer nearest ``count / phi`` prime to it."""
    step = max(1, round(count / _PHI))
    while math.gcd(step, count) != 1:
        step += 1
    return step


def next_offset(engine, key, most, seed=None):
    """The offset (0 to ``most``) of the next request of the question of
    ``key`` (a keys.Key) in this process, for the database ``engine``."""
    shape = keys.checked(key)
    count = most + 1
    turns = _TURNS.setdefault(engine, {})
    turn = turns.pop(shape, None)
    if turn is None or turn[2] != stride(count) or turn[1] >= count:
        rng = random.Random(None if seed is None else '%s:%s' % (seed,
                                                                   shape))
        turn = (0, rng.randrange(count), stride(count))
    number, first, step = turn
    turns[shape] = (number + 1, first, step)
    if len(turns) > SHAPES_KEPT:
        del turns[next(iter(turns))]
    return (first + number * step) % count
