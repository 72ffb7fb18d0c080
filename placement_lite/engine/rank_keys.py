"""The rank key of ranked candidates (engine/ranked.py) and the bounds
of trees: what no candidate of a tree can beat."""

import collections


class RankKeys:
    """The rank keys of candidates and the bounds of trees. What a tree
    keeps free comes from the tree order (db.cloud.orders), whose key
    holds it signed: (sign x free of each class of rank_by, ..., root
    id)."""

    def __init__(self, rank_by, read, order):
        self.rank_by = rank_by
        #: The cloud.View of the whole cloud (the tree order's).
        self.read = read
        self.order = order
        #: [(rc name, 1 for pack or -1 for spread)], in order.
        self.orders = [(order.resource_class, order.sign)
                       for order in rank_by.orders]
        #: {provider id: its trait names}.
        self._traits = {}

    def traits(self, provider_id):
        """The trait names of ``provider_id`` (a tuple)."""
        found = self._traits.get(provider_id)
        if found is None:
            found = self._traits[provider_id] = self.read.trait_names(
                provider_id)
        return found

    def read_traits(self, provider_ids):
        """Look up the trait names of ``provider_ids`` at once, if
        preferred traits are asked (cheaper than one by one)."""
        if self.rank_by.trait_names:
            self._traits.update(self.read.trait_names_of(provider_ids))

    def _signed_free(self, anchor):
        """(sign x what the tree ``anchor`` keeps free of each class of
        rank_by, ...)."""
        return self.order.key_of(anchor)[:len(self.orders)]

    def _root_preferred(self, choice, anchor):
        wanted = self.rank_by.root_preferred
        return len(wanted.intersection(self.traits(anchor))) if wanted else 0

    def bound(self, choice, anchor, signed_free=None):
        """(A key no candidate of the tree ``anchor`` under ``choice`` can
        beat, each term at its best; the free terms every candidate of the
        tree has, when they are the same for all: no group asking a class
        of rank_by can take it both from the tree and from outside).
        ``signed_free``: what the tree keeps free, signed, if known."""
        result = choice.result
        preferred = self._root_preferred(choice, anchor)
        wanted = self.rank_by.preferred
        for group in result.groups:
            names = wanted.get(group.suffix)
            if not names:
                continue
            options = group.by_anchor[anchor]
            if group.spread:
                offered = frozenset().union(*(
                    self.traits(p) for providers in options.values()
                    for p in providers))
                preferred += len(names & offered)
            else:
                preferred += max(len(names.intersection(self.traits(p)))
                                 for p in options)
        class_ids = choice.searcher.names.class_ids
        terms = []
        fixed = []
        for (name, sign), free in zip(self.orders, signed_free or (
                self._signed_free(anchor))):
            rc_id = class_ids.get(name)
            most = least = 0
            for group in result.groups:
                amount = group.amounts.get(rc_id)
                if amount is None:
                    continue
                most += amount
                options = group.by_anchor[anchor]
                if group.spread:
                    options = options[rc_id]
                inside = sum(result.root_of(p) == anchor for p in options)
                # Unless a sharing provider of another tree may give it.
                if inside == len(options):
                    least += amount
                elif inside and fixed is not None:
                    fixed = None
            # spread: at best the tree gives least; pack: at best most.
            taken = most if sign > 0 else least
            terms.append(free - sign * taken)
            if fixed is not None:
                fixed.append(free - sign * least)
        return ((*choice.alternative.rank, -preferred, 0, *terms, anchor, -1),
                None if fixed is None else tuple(fixed))

    def preferred(self, choice, anchor, candidate):
        """How many preferred traits ``candidate`` (of the tree
        ``anchor``) has."""
        wanted = self.rank_by.preferred
        preferred = self._root_preferred(choice, anchor)
        traits = self.traits
        for suffix, providers in candidate.mappings.items():
            for name in wanted.get(suffix, ()):
                for provider in providers:
                    if name in traits(provider):
                        preferred += 1
                        break
        return preferred

    def of_tree(self, choice, anchor, candidates):
        """The keys of ``candidates``, every candidate of the tree
        ``anchor`` under ``choice`` in generation order."""
        root_of = choice.result.root_of
        signed_free = self._signed_free(anchor)
        partial = []
        for index, candidate in enumerate(candidates):
            terms = []
            for (name, sign), free in zip(self.orders, signed_free):
                taken = sum(resources.get(name, 0) for provider, resources
                            in candidate.allocations.items()
                            if root_of(provider) == anchor)
                terms.append(free - sign * taken)
            partial.append((-self.preferred(choice, anchor, candidate),
                            tuple(terms), index))
        rounds = collections.Counter()
        keys = [None] * len(partial)
        for negative_preferred, terms, index in sorted(partial):
            keys[index] = (*choice.alternative.rank, negative_preferred,
                           rounds[negative_preferred], *terms, anchor,
                           index)
            rounds[negative_preferred] += 1
        return keys


def key(rank, preferred, round_, terms, anchor, index):
    """The rank key of the ``index``-th candidate of the tree ``anchor``
    (see engine/ranked.py)."""
    return (*rank, -preferred, round_, *terms, anchor, index)


def key_names(rank_by):
    """The names of the terms of the rank key of ``rank_by`` (a
    rank_query.Ranking), in order."""
    return (['alternatives', 'preferred', 'round']
            + [str(order) for order in rank_by.orders] + ['tree', 'index'])
