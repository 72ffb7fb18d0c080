"""Each tree's first candidate, kept between requests of one question
while nothing it was made of changed: what may be kept, and how a tree's
first candidate is taken from what is kept (the Cloud keeps them:
db/cloud/firsts.py).

Schedulers ask one question again and again (nova: one flavor,
``limit=1000``), and between two asks only the trees claimed on change.
A bounded request takes the first candidate of each tree that can serve
(engine._spread; ranked, each tree's first in the order of what the
trees keep free, in_tree_order.ranked, claims included, or of a tree
whose candidates come in key order, best_first.BestFirstWalk), and that
candidate is made of the question, the providers the search offers each
group under the tree (its *offer*) and what the store keeps of those
providers. The handler renders a candidate once (Candidate.rendered), so
a kept one is not rendered again either.

Only what depends on nothing else is kept: no candidate made of sharing
providers alone (whether an earlier tree gave it decides whether it is
given), none of a request with same_subtree (a provider's ancestors,
which the offer does not name, decide it), none shuffled or explained.
"""

import itertools

from placement_lite.db import cloud


def kept_for(view, key, request, rng, tally):
    """The first candidates kept for the keys.Key ``key`` (its question's,
    for the path of the engine making them), as the cloud.View ``view``
    finds them; None where they may not be kept: shuffled (``rng``),
    explained (``tally``), or under same_subtree."""
    if (rng or tally.active or request.same_subtrees
            or request.subtree_exclusions):
        return None
    return view.firsts(key)


def first_and_others(combiner, anchor, kept, every=False):
    """(The first candidate of ``anchor`` or None, an iterator of its
    others) from ``combiner`` (``every``: see Combiner.for_anchor), the
    first taken from ``kept`` (kept_for's, or None) where it holds it."""
    if kept is None:
        others = combiner.for_anchor(anchor, every)
        return next(others, None), others
    offer = combiner.offer(anchor)
    first = kept.first(anchor, offer)
    if first is not cloud.NOT_KEPT:
        return first, _after_first(combiner, anchor, every)
    others = combiner.for_anchor(anchor, every)
    first = next(others, None)
    if first is not None and not _of_sharing_providers_alone(
            first, combiner.result.sharing):
        kept.keep(anchor, offer, tuple(_providers(offer)), first)
    return first, others


def _of_sharing_providers_alone(candidate, sharing):
    return all(sharing.issuperset(providers)
               for providers in candidate.mappings.values())


def _after_first(combiner, anchor, every):
    """The candidates of ``anchor`` after its first, made only when
    asked for."""
    yield from itertools.islice(combiner.for_anchor(anchor, every), 1, None)


def _providers(offer):
    """Every provider an offer names."""
    found = set()
    for choices in offer:
        if isinstance(choices, dict):
            for providers in choices.values():
                found.update(providers)
        else:
            found.update(choices)
    return found
