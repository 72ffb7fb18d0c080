"""The order a claim (POST /allocation_claims, 1.43) tries candidates in:
the best by the rank key, and where its walk starts (domain/claims.py
writes them)."""

import dataclasses

from placement_lite.engine import question
from placement_lite.engine import rank_query
from placement_lite.engine import ranked


@dataclasses.dataclass
class ClaimOrder:
    """The candidates a claim tries."""

    #: answer.Candidates, best first by the rank key.
    found: object
    #: The index of the candidate the claim's walk starts at (dispersion).
    start: int


def claim_order(database, conf, request, bound):
    """The best ``bound`` candidates of ``request`` for a claim, best
    first, and where the claim's walk starts.

    The key is the request's rank_by; without one, ``[placement]
    allocation_candidates_rank_by``, else spread on every class the
    request asks for, in the order asked (claim_rank_by). With
    ``[placement] allocation_candidates_dispersion`` the walk starts at
    the offset of the request's dispersion turn (engine.dispersion), as a
    ranked answer would; the candidates before it are not left out but
    tried last. With ``request.explain`` the answer carries the
    explanation."""
    asked = question.Question(request, question.Options.of(conf),
                              for_claim=True)
    own = request.ranking is not None and request.ranking.orders
    if not own:
        server_order = rank_query.server_order(asked.options.rank_by)
        orders = (server_order or claim_rank_by(request)).orders
        request = dataclasses.replace(request, ranking=dataclasses.replace(
            request.ranking or rank_query.Ranking(), orders=orders))
    found = ranked.ranked_candidates(database, asked, request, bound,
                                     by_server=not own)
    count = len(found.allocation_requests)
    return ClaimOrder(found, found.offset % count if count else 0)


def claim_rank_by(request):
    """The Ranking a claim without a key of its own or the server's is
    ranked by: spread on each class the request asks for, in the order
    asked (the host keeping most of the first class free first)."""
    classes = dict.fromkeys(name for group in request.groups.values()
                            for name in group.resources)
    return rank_query.Ranking(tuple(
        rank_query.Order(rank_query.SPREAD, name) for name in classes))
