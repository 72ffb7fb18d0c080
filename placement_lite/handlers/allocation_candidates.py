"""GET /allocation_candidates (from 1.10): where could this request go?"""

from placement_lite import engine
from placement_lite import metrics
from placement_lite import microversion
from placement_lite import requestlog
from placement_lite.domain import device_profiles
from placement_lite.handlers import candidates_answer
from placement_lite.handlers import dates
from placement_lite.handlers import query
from placement_lite.handlers import responses
from placement_lite.schemas import allocation_candidates as schema


class AllocationCandidates:
    def on_get(self, req, resp):
        responses.require_version(req, microversion.ALLOCATION_CANDIDATES)
        responses.require_json_accept(req)
        req.placement.can('placement:allocation_candidates:list')
        version = microversion.of(req)
        request = candidate_request(req, schema.QUERY)
        with engine.find_candidates(req.placement.db, req.placement.conf,
                                    request) as found:
            body = candidates_answer.render(found, request, version)
        req.env[requestlog.CANDIDATES] = (found.count, found.trees)
        req.env[metrics.EXPLANATION] = found.explanation
        responses.render_json_pieces(resp, body)
        dates.set_last_modified(req, resp, None)


def candidate_request(req, query_schemas):
    """The engine.CandidateRequest of the request's query string, checked
    against ``query_schemas`` ((since version, schema) pairs), a device
    profile expanded (1.40)."""
    version = microversion.of(req)
    pairs = query.query_pairs(req)
    query.validate(req, microversion.schema_for(version, query_schemas))
    if version >= microversion.DEVICE_PROFILES:
        pairs = device_profiles.expand_request(req.placement.db, pairs,
                                               version)
    return engine.parse_query(pairs, version)
