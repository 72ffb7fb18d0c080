"""What both walks of a ranked request share (in_tree_order.py,
best_first.py): their answer, what a tree must keep free to serve, the
only trees that could, and the cloud's tree order in batches."""

import dataclasses
import math
import typing

import numpy as np

from placement_lite.engine import explain


@dataclasses.dataclass
class Ranked:
    #: combine.Candidate objects, best first.
    chosen: list
    #: {provider id: root id} of every provider they name.
    roots: dict
    #: The cloud.View the summaries are made from.
    view: object
    #: The combine.Combiner of every search the candidates come from.
    combiners: list
    #: With explain: a RankExplanation.
    explained: typing.Optional[explain.RankExplanation] = None


def asked_of_trees(request, class_ids, shared):
    """{rc id: (what ``request`` asks of the class in all, the most one
    group asks)} for the classes it asks that no sharing provider holds
    (``shared(rc id)`` tells): what a tree must keep free to serve it (one
    provider gives a group all it asks of a class)."""
    asked = {}
    for group in request.groups.values():
        for name, amount in group.resources.items():
            rc_id = class_ids.get(name)
            if rc_id is not None and not shared(rc_id):
                total, of_one = asked.get(rc_id, (0, 0))
                asked[rc_id] = (total + amount, max(of_one, amount))
    return asked


def only_trees(searcher):
    """The root ids of the only trees that could serve the request of
    ``searcher``, when they are few (Searcher.few_trees) or root_required
    and root_member_of allow only some; None: any tree. Raises
    search.NoCandidates as few_trees does."""
    names = searcher.names
    only = searcher.few_trees()
    if names.allowed_anchors is not None:
        only = names.allowed_anchors if only is None else (
            names.allowed_anchors.intersection(only))
    return only


def tree_batches(searcher, order, orders, asked, size, only, among=None,
                  outside=None):
    """Lists of (key, root id) to walk in turn, in tree order: the first
    of ``size`` trees, each next one twice as many (all of ``only`` at
    once when they are no more). Only trees that could serve: of
    ``only`` (only_trees) when not None, not excluded by
    root_required, keeping free what ``asked`` (asked_of_trees) needs,
    and, when given, among the root ids ``among`` and not among
    ``outside`` (numpy arrays)."""
    excluded = searcher.names.excluded_anchors
    if only is not None and len(only) <= size:
        only = set(only).difference(excluded)
        if among is not None:
            only.intersection_update(among.tolist())
        if outside is not None:
            only.difference_update(outside.tolist())
        ordered = order.ordered(only, asked)
        if ordered:
            yield ordered
        return
    if only is not None:
        only = np.fromiter(only, np.int64, len(only))
        among = only if among is None else np.intersect1d(only, among)
    # Only keys keeping at least ``need`` of the first class: from the
    # first (pack), or up to the last (spread).
    lowest = highest = None
    if orders:
        first_class, sign = orders[0]
        need = asked.get(first_class, (0, 0))[0]
        lowest = (need,) if sign > 0 and need else None
        highest = (-need, math.inf) if sign < 0 and need else None
    after = None
    while True:
        found, after = order.after(after, size, asked, lowest, highest,
                                   among, outside)
        batch = [(key, root_id) for key, root_id in found
                 if root_id not in excluded]
        if batch:
            yield batch
        if after is None or len(found) < size:
            return
        size *= 2


#: No root ids.
NO_ROOTS = np.zeros(0, np.int64)
