"""Each tree's first candidate of a question, kept by the Cloud while
nothing it was made of changed (the engine decides what it keeps:
engine/reuse.py).

A first candidate is made of the question, the providers the search
offered each group under the tree (its *offer*) and what the store keeps
of those providers. So it is kept with the offer, the providers the
offer names and the store's ``versions.changes`` as they were before the
request read anything, and given again while the offer is the same and
none of those providers changed after that count (Store.changed_at).
"""

#: The first candidates a Cloud keeps at most, of every question, the
#: least recently given going first: about 2 KB each (the candidate, its
#: offer, its JSON), kept by each worker: 10 MB, enough for five
#: questions of nova's limit of 1,000.
MOST_KEPT = 5_000
NOT_KEPT = object()


class Firsts:
    """The first candidates kept for one keys.Key, for one request:
    ``made_at`` is the store's ``versions.changes`` before the request
    read anything."""

    def __init__(self, cloud, key, made_at):
        self._cloud = cloud
        self._key = key
        self.made_at = made_at

    def first(self, anchor, offer):
        """The first candidate kept for ``anchor`` with ``offer``, or
        NOT_KEPT."""
        kept = self._cloud.first_candidates.get(self._key, anchor)
        if kept is None:
            return NOT_KEPT
        made_at, kept_offer, providers, candidate = kept
        if kept_offer != offer:
            return NOT_KEPT
        changed_at = self._cloud.store.changed_at
        known = len(changed_at)
        for provider in providers:
            if provider >= known or changed_at[provider] > made_at:
                return NOT_KEPT
        return candidate

    def keep(self, anchor, offer, providers, candidate):
        """Keep ``candidate``, the first of ``anchor`` with ``offer``,
        which names ``providers`` (a tuple of ids)."""
        self._cloud.first_candidates.put(
            self._key, (self.made_at, offer, providers, candidate), anchor)
