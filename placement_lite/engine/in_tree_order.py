"""The walk of a ranked request keyed by its trees' free amounts alone:
the trees in the cloud's tree order (db.cloud.orders), each tree's first
candidate in turn, then the second of each, and so on."""

from placement_lite.db import cloud
from placement_lite.engine import combine
from placement_lite.engine import reuse
from placement_lite.engine import walks


def ranked(searcher, request, bound, roomiest_first, best_trees_left_out,
           first_window, counted, kept=None):
    """The walks.Ranked candidates of a request keyed by its trees' free
    amounts only (ranked._keyed_by_free_only), found without searching
    the whole cloud;
    None when some class of the key is held by a sharing provider (a
    candidate may then take it from outside its tree, and trees keeping
    as much free would not rank alike).

    Every candidate of a tree then has the same free terms (it takes what
    it asks of those classes from the tree) and no preferred trait, so a
    candidate's round is its index in its tree's generation order, and the
    key orders the candidates by round, then by tree in the order of what
    the trees keep free (db.cloud.orders): the first candidate of each tree
    that can serve, trees in that order, then the second of each, and so
    on. A candidate made only of sharing providers, which several trees
    give, is kept where it comes first. The trees are walked in that
    order, in windows (cloud.Window.of_roots) searched as the unranked
    search does, until ``bound`` trees gave their first candidate; only
    when fewer can does the walk reach every tree. The answer is the
    brute-force one.

    With ``best_trees_left_out`` (n), every candidate of the first n trees
    that can serve is left out of the answer (where fewer trees can serve,
    n modulo their number): the answer's first candidate is then the best
    of the (n + 1)th tree, wherever the rounds go. A tree's first
    candidate is taken from ``kept`` (reuse.kept_for's) where it holds
    it."""
    read = searcher.view
    orders = request.ranking.free_terms(searcher.names.class_ids)
    if any(read.sharing_holders(rc_id) for rc_id, _sign in orders):
        return None
    order = read.tree_order(orders)
    asked = walks.asked_of_trees(request, searcher.names.class_ids,
                                 read.sharing_holders)
    answer = _TreesInTurn(bound, best_trees_left_out)
    roots = {}
    combiners = []
    for keyed in walks.tree_batches(searcher, order, orders, asked,
                                    first_window, walks.only_trees(searcher)):
        batch = [root_id for _key, root_id in keyed]
        found = searcher.search(cloud.Window.of_roots(batch))
        if counted is not None:
            counted.trees += len(batch)
            counted.anchors += len(found.anchors) if found else 0
        if found is None:
            continue
        roots.update(found.roots)
        combiner = combine.Combiner(found, request, parents=read.parents,
                                    roomiest_first=roomiest_first)
        combiners.append(combiner)
        anchors = set(found.anchors)
        for anchor in batch:
            if anchor in anchors and answer.first_of_tree(
                    *reuse.first_and_others(combiner, anchor, kept,
                                            every=True), found.sharing):
                break
        else:
            continue
        break
    else:
        answer.every_tree_walked()
    if not searcher.all_groups_reached:
        searcher.check_unreached_names()
    return walks.Ranked(answer.chosen, roots, read, combiners)


class _TreesInTurn:
    """The answer of ranked: the first candidate of each tree that
    can serve, trees in order, then the second of each, and so on; the
    trees of the best ``left_out`` out; ``bound`` candidates at most."""

    def __init__(self, bound, left_out):
        self.bound = bound
        self.left_out = left_out
        self.chosen = []
        #: (the tree's first candidate, its others lazily, the sharing
        #: providers of its search), for each tree that can serve, in order.
        self._trees = []
        #: Requests made only of sharing providers already met.
        self._met = set()

    def first_of_tree(self, first, others, sharing):
        """Take a tree's ``first`` candidate, if it has one (``others``:
        an iterator of the rest); whether the answer holds ``bound``
        candidates now."""
        if first is not None:
            self._trees.append((first, others, sharing))
            self._take(first, sharing, len(self._trees) <= self.left_out)
        return len(self.chosen) == self.bound

    def every_tree_walked(self):
        """Every tree was walked: the best trees left out are counted
        modulo those that can serve, and the later rounds taken."""
        served = len(self._trees)
        if served and served <= self.left_out:
            self.left_out %= served
            self.chosen.clear()
            self._met.clear()
            for index, (first, _others, sharing) in enumerate(self._trees):
                self._take(first, sharing, index < self.left_out)
        for candidate, sharing, index in combine.round_robin(
                _tagged(others, sharing, index)
                for index, (_first, others, sharing)
                in enumerate(self._trees)):
            if len(self.chosen) == self.bound:
                return
            self._take(candidate, sharing, index < self.left_out)

    def _take(self, candidate, sharing, left_out):
        if len(self.chosen) == self.bound:
            return
        identity = combine.sharing_identity(candidate, sharing)
        if identity is not None:
            if identity in self._met:
                return
            self._met.add(identity)
        if not left_out:
            self.chosen.append(candidate)


def _tagged(candidates, sharing, index):
    """(candidate, ``sharing``, ``index``) for each of ``candidates``,
    lazily: the later rounds make only as many as the answer takes."""
    for candidate in candidates:
        yield candidate, sharing, index
