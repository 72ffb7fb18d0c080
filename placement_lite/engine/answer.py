"""What an answer to a candidates request holds: its candidates, the
uuids of the providers they name, and the summaries of the trees they
touch (made by finding and ranked alike)."""

import dataclasses

from placement_lite.engine import explain


@dataclasses.dataclass
class Candidates:
    #: combine.Candidate objects (providers by internal id).
    allocation_requests: list
    #: {provider id: uuid} for every provider they name.
    uuids: dict
    #: cloud.summaries.Shown: the providers to show, in provider id
    #: order.
    provider_summaries: object
    #: How many trees had a provider for some group, in the windows
    #: searched (what the request log reports as trees searched).
    trees: int = 0
    #: explain.Explanation, with explain.
    explanation: explain.Explanation = None
    #: The offset the request's dispersion turn gave (engine.dispersion;
    #: 0 without dispersion).
    offset: int = 0

    @property
    def count(self):
        return len(self.allocation_requests)


class Streamed:
    """The Candidates of an answer without a bound, its allocation
    requests made as they are read, once, inside find_candidates' context
    (same_subtree may read parents on the way): an answer of tens of
    thousands of candidates never holds them all, and a candidate's
    memory is used again by the next. provider_summaries shows the trees
    they touched, once they are all read."""

    explanation = None

    def __init__(self, result, generated):
        """``generated``: the candidates of ``result`` (a
        search.SearchResult), lazily."""
        self._result = result
        self._generated = generated
        #: {provider id: uuid} of every provider a candidate may name.
        self.uuids = result.view.summaries(result.trees_named()).uuids()
        self.trees = len(set(result.roots.values()))
        #: How many candidates were read.
        self.count = 0
        #: The providers giving resources in the candidates read.
        self._giving = set()

    @property
    def allocation_requests(self):
        giving = self._giving
        for candidate in self._generated:
            self.count += 1
            giving.update(candidate.allocations)
            yield candidate

    @property
    def provider_summaries(self):
        roots = self._result.roots
        return self._result.view.summaries(
            {roots[p] for p in self._giving})


EMPTY = Candidates([], {}, {})


def with_summaries(view, roots, chosen, shown, request):
    """``chosen`` with the uuids of the providers they name and the
    summaries of the trees they touch, from the cloud.View ``view``
    (``roots`` maps each provider to its root); ``shown`` limits the
    summaries (None: every provider of those trees)."""
    # (Candidates share their dicts: their keys are joined in one pass.)
    tree_roots = {roots[p] for p in set().union(
        *(c.allocations for c in chosen))}
    summaries = view.summaries(tree_roots)
    uuids = summaries.uuids()
    if any(not group.resources for group in request.groups.values()):
        # Providers of resourceless groups may lie outside the trees shown
        # (every other provider a mapping names gives resources).
        missing = {p for c in chosen for ps in c.mappings.values()
                   for p in ps if p not in uuids}
        if missing:
            uuids.update(view.provider_uuids(missing))
    if shown is not None:
        summaries = summaries.only(shown)
    return Candidates(chosen, uuids, summaries,
                      trees=len(set(roots.values())))


def legacy_summary_providers(combiners, chosen, truncated):
    """Before 1.29 summaries show the providers giving resources in any
    request the reference would have built, for the trees returned (the
    ``combiners`` of every window searched)."""
    roots = {}
    for combiner in combiners:
        roots.update(combiner.result.roots)
    tree_roots = {roots[p] for c in chosen for p in c.allocations}
    shown = {p for c in chosen for p in c.allocations}
    if truncated:
        for combiner in combiners:
            for anchor in sorted(set(combiner.result.anchors) & tree_roots):
                for candidate in combiner.for_anchor(anchor):
                    shown.update(p for p in candidate.allocations
                                 if roots[p] in tree_roots)
    return shown
