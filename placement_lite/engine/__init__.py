"""The allocation-candidates engine: the names its callers use.

    handlers/allocation_candidates.py  find_candidates (finding.py)
    domain/claims.py                   claim_order (claim_order.py)
    app.py                             warm_caches (finding.py),
                                       rank_query.server_order

What each module does is in docs/architecture.md, "The
allocation-candidates pipeline".
"""

from placement_lite.engine import rank_query  # noqa: F401
from placement_lite.engine.answer import Candidates, Streamed  # noqa: F401
from placement_lite.engine.claim_order import ClaimOrder  # noqa: F401
from placement_lite.engine.claim_order import claim_order  # noqa: F401
from placement_lite.engine.claim_order import claim_rank_by  # noqa: F401
from placement_lite.engine.finding import find_candidates  # noqa: F401
from placement_lite.engine.finding import warm_caches  # noqa: F401
from placement_lite.engine.request import CandidateRequest  # noqa: F401
from placement_lite.engine.request import parse_query  # noqa: F401
