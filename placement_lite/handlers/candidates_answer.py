"""The body of a candidates answer (GET /allocation_candidates), rendered
in one place: its allocation requests, its provider summaries and its
explain member, as the reference's json.dumps would write them.

What rendering keeps between requests is kept by the process's Cloud:
every provider's summary rendered (db.cloud.summaries.Arena, made ahead
at start-up by render_ahead), and each kept first candidate's request
(Candidate.rendered: a candidate outlives its request only as the
Cloud's, db.cloud.firsts).
"""

import dataclasses
import json
import typing

from placement_lite import microversion


#: The body of a candidates answer goes out in pieces of this many bytes,
#: each below the size from which malloc maps memory of its own (128
#: KiB): they come from the heap and go back to it. One body of tens of
#: megabytes (an unbounded answer at 20,000 hosts) was mapped afresh for
#: every answer, each of its pages faulted in, and copied twice more.
BODY_PIECE = 64 * 1024


def render(found, request, version):
    """The response body for ``version``, as pieces of JSON bytes (see
    BODY_PIECE) joining into the bytes json.dumps would give (the
    reference's), made from the candidates' fixed layout without building
    the body as dicts first, which costs more than the output. The
    candidates are read once, in order, before the summaries (an
    engine.Streamed answer makes them as they are read)."""
    form = _SummaryForm(
        None if version >= microversion.SUMMARIES_ALL_RESOURCES
        else request.requested_resource_classes,
        version >= microversion.CANDIDATES_REQUIRED,
        version >= microversion.NESTED_AWARE_CANDIDATES)
    pieces = [b'{"allocation_requests": [']
    pieces += _joined_in_pieces(_allocation_requests(found, version))
    pieces.append(b'], "provider_summaries": {')
    summaries = found.provider_summaries
    if len(summaries):
        pieces += summaries.rendered(form, _member, BODY_PIECE)
    pieces.append(b'}}' if found.explanation is None else
                  b'}, "explain": %s}' % json.dumps(
                      _explain(found.explanation)).encode())
    return pieces


def _joined_in_pieces(texts):
    """``texts`` (ASCII, an iterable read once) joined with ', ', as bytes
    pieces of about BODY_PIECE bytes."""
    pieces = []
    held = []
    size = 0
    for text in texts:
        held.append(text)
        size += len(text) + 2
        if size >= BODY_PIECE:
            pieces.append(_piece(held, pieces))
            held = []
            size = 0
    if held:
        pieces.append(_piece(held, pieces))
    return pieces


def _piece(texts, before):
    """``texts`` joined, as the piece after the pieces ``before``."""
    return ', '.join(texts if not before else [''] + texts).encode()


def _explain(explanation):
    """The ``explain`` member (1.41): api-ref/extensions.md defines it."""
    return {
        'groups': [_group(group) for group in explanation.groups],
        'trees': {'steps': [_step(step) for step in explanation.tree_steps],
                  'emptied_by': _step(explanation.trees_emptied_by)},
        'windows': explanation.windows,
        'walked': explanation.walked,
        'provider': explanation.provider,
        **({} if explanation.ranking is None
           else {'ranking': _ranking(explanation.ranking)}),
    }


def _ranking(ranked):
    """The ``ranking`` member of explain (1.42): the terms of the key and
    each returned candidate's."""
    return {
        'key': ranked.key,
        'walked': ranked.walked,
        'candidates': [{
            'alternatives': list(key.alternatives),
            'preferred': key.preferred,
            'round': key.round,
            'free': key.free,
            'tree': key.tree,
            'index': key.index,
            'skipped': [_present({'alternatives': list(skipped.alternatives),
                                  'step': skipped.step,
                                  'group': skipped.group})
                        for skipped in key.skipped],
        } for key in ranked.candidates],
    }


def _group(group):
    shown = {'suffix': group.suffix,
             'steps': [_step(step) for step in group.steps],
             'emptied_by': _step(group.emptied_by)}
    if group.providers is not None:
        shown['providers'] = [_row(row) for row in group.providers]
    return shown


def _step(step):
    """A step and its count, or None."""
    if step is None:
        return None
    shown = _present({'step': step.step,
                      'resource_class': step.resource_class,
                      'amount': step.amount, 'largest': step.largest})
    shown[step.unit] = step.count
    return shown


def _row(row):
    shown = _present({'uuid': row.uuid, 'resource_class': row.resource_class})
    excluded = row.excluded_by
    shown['excluded_by'] = None if excluded is None else _present(
        dataclasses.asdict(excluded))
    return shown


def _present(fields):
    """``fields`` without those that are None."""
    return {name: value for name, value in fields.items()
            if value is not None}


class _SummaryForm(typing.NamedTuple):
    """How provider summaries show a provider at one microversion."""

    #: Only these resource classes (the requested ones, before 1.27); None:
    #: all of them.
    requested: typing.Optional[set]
    #: Its traits (from 1.17).
    traits: bool
    #: Its parent and root (from 1.29).
    tree: bool


#: How summaries show providers from 1.29: nova's form and the newest.
_NEWEST_FORM = _SummaryForm(None, True, True)


def render_ahead(summaries):
    """Render ``summaries`` (db.cloud.summaries.Shown: every provider) as
    answers from 1.29 show them, kept by the process for them: at
    start-up, so that the first answers pay no more than later ones (and
    a server forking its workers afterwards hands them the same pages)."""
    summaries.render_ahead(_NEWEST_FORM, _member)


#: One string as json.dumps writes it: quoted, escaped, ASCII only.
_quote = json.encoder.encode_basestring_ascii


def _object(members):
    """A JSON object from its ``"name": value`` members, spaced as
    json.dumps spaces it."""
    return '{%s}' % ', '.join(members)


#: The most texts the renderer keeps of what providers give, and of
#: groups' providers, before it forgets them (see _allocation_requests).
RENDERED_KEPT = 4096


def _allocation_requests(found, version):
    """The allocation requests as JSON, one text each, lazily: a list of
    allocations before 1.12, a dict by uuid from 1.12; mappings from
    1.34."""
    uuids = found.uuids
    # Quoted as needed: a candidate rendered before needs none.
    quoted = _Once(lambda p: _quote(uuids[p]))
    # An answer repeats few amounts and suffixes: each is written once.
    amounts = _Once(lambda items: _object(['%s: %d' % (_quote(name), amount)
                                           for name, amount in items]))
    suffixes = _Once(_quote)
    if version < microversion.ALLOCATIONS_BY_PROVIDER:
        for c in found.allocation_requests:
            yield '{"allocations": [%s]}' % ', '.join([
                '{"resource_provider": {"uuid": %s}, "resources": %s}'
                % (quoted[p], amounts[tuple(r.items())])
                for p, r in c.allocations.items()])
        return
    with_mappings = version >= microversion.GROUP_MAPPINGS
    # Candidates share their {class: amount} dicts and their mappings' sets
    # (see combine.Candidate), and those sharing them come one after the
    # other: what a provider gives is written again only when its dict is
    # not the one it gave last ({provider: (text, dict)}), a group's
    # providers once per set ({(suffix, id of the set): (text, set)}).
    # Each text is kept with its dict or set (a candidate read may be
    # gone, its ids given to others), the last RENDERED_KEPT only: an
    # answer made as it is read does not keep them all.
    given = {}
    mapped = {}
    # Quoted uuids sort as the uuids do (nothing in a uuid is escaped).
    quote = quoted.__getitem__
    for c in found.allocation_requests:
        rendered = c.rendered
        if rendered is not None and rendered[0] is with_mappings:
            yield rendered[1]
            continue
        if len(given) > RENDERED_KEPT:
            given.clear()
        members = []
        for p, r in c.allocations.items():
            member = given.get(p)
            if member is None or member[1] is not r:
                member = given[p] = ('%s: {"resources": %s}' % (
                    quoted[p], amounts[tuple(r.items())]), r)
            members.append(member[0])
        if with_mappings:
            if len(mapped) > RENDERED_KEPT:
                mapped.clear()
            groups = []
            for suffix, ps in c.mappings.items():
                group = mapped.get((suffix, id(ps)))
                if group is None:
                    group = mapped[suffix, id(ps)] = ('%s: [%s]' % (
                        suffixes[suffix], ', '.join(sorted(map(quote, ps)))),
                        ps)
                groups.append(group[0])
            request = '{"allocations": {%s}, "mappings": {%s}}' % (
                ', '.join(members), ', '.join(groups))
        else:
            request = '{"allocations": {%s}}' % ', '.join(members)
        c.rendered = (with_mappings, request)
        yield request


class _Once(dict):
    """{value: its JSON}, made with ``write(value)`` once while it is among
    the last RENDERED_KEPT asked for: candidates come tree after tree, and
    an answer without a limit names every provider of the cloud."""

    def __init__(self, write):
        super().__init__()
        self.write = write

    def __missing__(self, value):
        if len(self) >= RENDERED_KEPT:
            self.clear()
        written = self[value] = self.write(value)
        return written


def _resources(resources):
    """((class name, capacity, used), ...) as JSON."""
    return _object(['%s: {"capacity": %d, "used": %d}'
                    % (_quote(name), capacity, used)
                    for name, capacity, used in resources])


def _member(summary, form):
    resources = summary.resources
    if form.requested is not None:
        resources = [shown for shown in resources
                     if shown[0] in form.requested]
    shown = ['"resources": ' + _resources(resources)]
    if form.traits:
        shown.append('"traits": [%s]' % ', '.join(
            map(_quote, summary.trait_names)))
    if form.tree:
        shown.append('"parent_provider_uuid": ' + (
            'null' if summary.parent_uuid is None
            else _quote(summary.parent_uuid)))
        shown.append('"root_provider_uuid": ' + _quote(summary.root_uuid))
    return ('%s: %s' % (_quote(summary.uuid), _object(shown))).encode()
