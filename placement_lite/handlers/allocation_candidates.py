"""GET /allocation_candidates (from 1.10): where could this request go?"""

from placement_lite import engine
from placement_lite import microversion
from placement_lite.domain import device_profiles
from placement_lite.handlers import query
from placement_lite.handlers import util
from placement_lite.schemas import allocation_candidates as schema


class AllocationCandidates:
    def on_get(self, req, resp):
        microversion.require(req, '1.10')
        util.require_json_accept(req)
        req.placement.can('placement:allocation_candidates:list')
        version = tuple(microversion.of(req))
        pairs = util.query_pairs(req)
        query.validate(req, schema.query_schema(version))
        if version >= (1, 40):
            pairs = device_profiles.expand_request(req.placement.db, pairs)
        request = engine.parse_query(pairs, version)
        found = engine.find_candidates(
            req.placement.db, req.placement.conf, request,
            nested_aware=version >= (1, 29))
        util.render_plain_strings(resp, render(found, request, version))
        util.set_last_modified(req, resp, None)


def render(found, request, version):
    """The response body for ``version``."""
    uuids = found.uuids
    chosen = found.allocation_requests
    if version < (1, 12):
        requests = [
            {'allocations': [
                {'resource_provider': {'uuid': uuids[p]}, 'resources': r}
                for p, r in c.allocations.items()]}
            for c in chosen]
    else:
        requests = [
            {'allocations': {uuids[p]: {'resources': r}
                             for p, r in c.allocations.items()}}
            for c in chosen]
    if version >= (1, 34):
        for body, c in zip(requests, chosen):
            body['mappings'] = {suffix: sorted([uuids[p] for p in ps])
                                for suffix, ps in c.mappings.items()}
    return {
        'allocation_requests': requests,
        'provider_summaries': _summaries(found.provider_summaries, request,
                                         version),
    }


def _summaries(summaries, request, version):
    """Before 1.27 only requested classes; traits from 1.17; parent and
    root uuids from 1.29."""
    if version >= (1, 29):
        return {s.uuid: {'resources': s.resources,
                         'traits': s.trait_names,
                         'parent_provider_uuid': s.parent_uuid,
                         'root_provider_uuid': s.root_uuid}
                for s in summaries.values()}
    requested = request.requested_resource_classes
    all_classes = version >= (1, 27)
    with_traits = version >= (1, 17)
    body = {}
    for summary in summaries.values():
        shown = summary.resources
        if not all_classes:
            shown = {name: usage for name, usage in shown.items()
                     if name in requested}
        entry = {'resources': shown}
        if with_traits:
            entry['traits'] = summary.trait_names
        body[summary.uuid] = entry
    return body


ROUTES = [('/allocation_candidates', AllocationCandidates())]
