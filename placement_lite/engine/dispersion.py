"""Dispersion: schedulers asking the same together get different
near-best answers (``[placement] allocation_candidates_dispersion``).

nova's scheduler weighs the candidates it gets and claims the best host.
When every scheduler gets the best ``limit`` candidates of the cloud in
the same order, they all claim the same host, and all but one are
refused. With a dispersion of D, the answer to a ranked request leaves
out every candidate of its n best trees, n from 0 to D (its offset), and
holds the next ``limit`` candidates: each scheduler's best is another of
the cloud's D + 1 best hosts (engine.ranked).

The offsets of the requests of one question (engine.question: the
query but for ``limit``, at its microversion, under the server's options)
follow each other in a process by a stride of about (D + 1) / phi, from a
point picked at random (or from ``allocation_candidates_dispersion_seed``),
so consecutive requests start far apart and every offset comes once in
D + 1 requests: the workers of a service each start at their own point,
as kube-scheduler starts each cycle at another node.
"""

import math
import random

_PHI = (1 + math.sqrt(5)) / 2


def stride(count):
    """A step through ``count`` offsets that comes back to its start only
    after all of them: the integer nearest ``count / phi`` prime to it."""
    step = max(1, round(count / _PHI))
    while math.gcd(step, count) != 1:
        step += 1
    return step


def next_offset(view, key, most, seed=None):
    """The offset (0 to ``most``) of the next request of the question of
    ``key`` (a keys.Key) in this process: its turns are kept by the Cloud
    ``view`` (a cloud.View) sees."""
    count = most + 1
    turn = view.dispersion_turn(key)
    if turn is None or turn[2] != stride(count) or turn[1] >= count:
        rng = random.Random(None if seed is None else '%s:%s' % (
            seed, key.question))
        turn = (0, rng.randrange(count), stride(count))
    number, first, step = turn
    view.keep_dispersion_turn(key, (number + 1, first, step))
    return (first + number * step) % count
