"""GET /allocation_candidates (from 1.10): where could this request go?"""

from placement_lite import engine
from placement_lite import microversion
from placement_lite import requestlog
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
        req.env[requestlog.CANDIDATES] = len(found.allocation_requests)
        util.render_json_bytes(resp, render(found, request, version))
        util.set_last_modified(req, resp, None)


def render(found, request, version):
    """The response body for ``version``, as JSON bytes."""
    return b''.join((
        b'{"allocation_requests": ',
        util.plain_strings_json(_allocation_requests(found, version)),
        b', "provider_summaries": ',
        _summaries_json(found.provider_summaries, request, version),
        b'}'))


def _allocation_requests(found, version):
    """A list of allocations before 1.12, a dict by uuid from 1.12;
    mappings from 1.34."""
    uuids = found.uuids
    chosen = found.allocation_requests
    if version < (1, 12):
        return [
            {'allocations': [
                {'resource_provider': {'uuid': uuids[p]}, 'resources': r}
                for p, r in c.allocations.items()]}
            for c in chosen]
    requests = [
        {'allocations': {uuids[p]: {'resources': r}
                         for p, r in c.allocations.items()}}
        for c in chosen]
    if version >= (1, 34):
        for body, c in zip(requests, chosen):
            body['mappings'] = {suffix: sorted([uuids[p] for p in ps])
                                for suffix, ps in c.mappings.items()}
    return requests


#: {provider uuid: (snapshot.ProviderSummary, its member of the 1.29+
#: provider_summaries object as JSON bytes)}, per process. The engine
#: hands out the same summary object while the provider is unchanged, so
#: most members of one answer are made again for the next.
_RENDERED = {}
#: _RENDERED is emptied when it reaches this many providers.
_RENDERED_LIMIT = 200_000


def _summaries_json(summaries, request, version):
    """The provider_summaries object as JSON bytes."""
    if version < (1, 29):
        return util.plain_strings_json(_summaries(summaries, request,
                                                  version))
    if len(_RENDERED) >= _RENDERED_LIMIT:
        _RENDERED.clear()
    members = []
    for summary in summaries.values():
        kept = _RENDERED.get(summary.uuid)
        if kept is None or kept[0] is not summary:
            kept = _RENDERED[summary.uuid] = (summary, _member(summary))
        members.append(kept[1])
    return b'{' + b', '.join(members) + b'}'


def _member(summary):
    """``"uuid": {...}``: one provider in the 1.29+ shape."""
    return util.plain_strings_json({summary.uuid: {
        'resources': summary.resources,
        'traits': summary.trait_names,
        'parent_provider_uuid': summary.parent_uuid,
        'root_provider_uuid': summary.root_uuid}})[1:-1]


def _summaries(summaries, request, version):
    """Before 1.29: only requested classes before 1.27; traits from
    1.17."""
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
