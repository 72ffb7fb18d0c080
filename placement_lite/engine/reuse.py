"""Each tree's first candidate, kept between requests of one shape while
nothing it was made of changed.

Schedulers ask the same question again and again (nova: one flavor,
``limit=1000``), and between two asks only the trees claimed on change.
A bounded request takes the first candidate of each tree that can serve
(engine._spread; ranked, each tree's first in the order of what the
trees keep free, ranked_search._in_tree_order, claims included, or of a
tree whose candidates come in key order, ranked_search._Walk), and that
candidate is made of the request, the
providers the search offers each group under the tree (its *offer*) and
what the store keeps of those providers: capacity, usage, traits, place.
So it is kept with the offer and the store's clock as it was before the
search read anything (Store.clock), and given again while the search
offers the same providers and none of them changed after that clock
(Store.changed_at). The handler renders a candidate once
(Candidate.rendered), so a kept one is not rendered again either.

Only what depends on nothing else is kept: no candidate made of sharing
providers alone (whether an earlier tree gave it decides whether it is
given), none of a request with same_subtree (a provider's ancestors,
which the offer does not name, decide it), none shuffled or explained.
"""

import itertools

from placement_lite.db.cloud import keys

#: The first candidates a store keeps at most, of every shape, the least
#: recently given going first: about 2 KB each (the candidate, its
#: offer, its JSON), kept by each worker: 10 MB, enough for five shapes
#: of nova's limit of 1,000.
MOST_KEPT = 5_000
NOT_KEPT = object()


class Kept:
    """The kept first candidates of one request shape, for one request:
    ``made_at`` is the store's clock before the request read anything (by
    default, now)."""

    def __init__(self, store, key, made_at=None):
        self._store = store
        self._key = keys.checked(key)
        self.made_at = store.clock if made_at is None else made_at

    def first(self, anchor, offer):
        """The first candidate kept for ``anchor`` with ``offer`` (a tuple
        of each group's choices under it), or NOT_KEPT."""
        every = self._store.kept
        key = (self._key, anchor)
        kept = every.get(key)
        if kept is None:
            return NOT_KEPT
        made_at, kept_offer, providers, candidate = kept
        if kept_offer != offer:
            return NOT_KEPT
        changed_at = self._store.changed_at
        known = len(changed_at)
        for provider in providers:
            if provider >= known or changed_at[provider] > made_at:
                return NOT_KEPT
        with self._store.lock:
            # The most recently given last: the first to go is the oldest.
            every[key] = every.pop(key, kept)
        return candidate

    def keep(self, anchor, offer, candidate, sharing):
        """Keep ``candidate``, the first of ``anchor`` with ``offer``,
        unless it is made of ``sharing`` providers alone."""
        if all(sharing.issuperset(providers)
               for providers in candidate.mappings.values()):
            return
        kept = self._store.kept
        key = (self._key, anchor)
        with self._store.lock:
            kept.pop(key, None)
            if len(kept) >= MOST_KEPT:
                del kept[next(iter(kept))]
            kept[key] = (self.made_at, offer, tuple(_providers(offer)),
                         candidate)


def kept_for(store, key, request, rng, tally, made_at=None):
    """The Kept of the first candidates ``request``'s trees give, for the
    keys.Key ``key`` (its question's, for the path of the engine making
    them), as of the clock ``made_at`` (by default, now); None where they
    may not be kept: shuffled (``rng``), explained (``tally``), or under
    same_subtree."""
    if (rng or tally.active or request.same_subtrees
            or request.subtree_exclusions):
        return None
    return Kept(store, key, made_at)


def first_and_others(combiner, anchor, kept, every=False):
    """(The first candidate of ``anchor`` or None, an iterator of its
    others) from ``combiner`` (``every``: see Combiner.for_anchor), the
    first taken from ``kept`` (a Kept, or None) where it holds it."""
    if kept is None:
        others = combiner.for_anchor(anchor, every)
        return next(others, None), others
    offer = combiner.offer(anchor)
    first = kept.first(anchor, offer)
    if first is not NOT_KEPT:
        return first, _after_first(combiner, anchor, every)
    others = combiner.for_anchor(anchor, every)
    first = next(others, None)
    if first is not None:
        kept.keep(anchor, offer, first, combiner.result.sharing)
    return first, others


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
