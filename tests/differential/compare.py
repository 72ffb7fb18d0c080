"""What of two answers must agree, and the divergences that are listed.

:func:`normalise` keeps what a client reads: the status; the headers
clients look at (Content-Type, Location, OpenStack-API-Version, Vary,
Cache-Control, Allow, and whether Last-Modified is there, its value being
a clock's); the body, parsed when it is JSON, with request ids and
server-made uuids replaced by placeholders and every list sorted (the API
defines the order of none of its lists; ``links`` and one-element lists
are unaffected).

:data:`LISTED` names the request classes whose differences are documented
in ``api-ref/divergences.md``; each rule says which section and checks
that the difference is the one documented there, not merely that it
happened on that route.
"""

import dataclasses
import json
import re
import urllib.parse

HEADERS = ('content-type', 'location', 'openstack-api-version', 'vary',
           'cache-control', 'allow')
_UUID = re.compile(r'[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-'
                   r'[0-9a-f]{12}')
_REQUEST_ID = re.compile(r'req-' + _UUID.pattern)


def _sorted(value):
    if isinstance(value, dict):
        return {key: _sorted(item) for key, item in value.items()}
    if isinstance(value, list):
        items = [_sorted(item) for item in value]
        return sorted(items, key=lambda item: json.dumps(item,
                                                         sort_keys=True))
    return value


def _placeholders(text, known):
    """Request ids, and uuids neither side could know in advance (those a
    server made up), as placeholders numbered by first appearance."""
    text = _REQUEST_ID.sub('req-*', text)
    made_up = {}

    def replace(match):
        if match.group(0) in known:
            return match.group(0)
        return made_up.setdefault(match.group(0),
                                  '<uuid-%d>' % (len(made_up) + 1))
    return _UUID.sub(replace, text)


#: Messages naming several things in the reference's set order, which is
#: incidental: the names are sorted (groups 1 and 2 are comma-separated).
_UNORDERED_IN_MESSAGES = (
    re.compile(r"Inventory for '([^']*)' on resource provider '([^']*)'"),
)


def _sort_names(match):
    text = match.group(0)
    for group in range(1, match.re.groups + 1):
        names = ', '.join(sorted(match.group(group).split(', ')))
        text = text.replace("'%s'" % match.group(group), "'%s'" % names, 1)
    return text


def normalise(response, known):
    headers = {}
    for name in HEADERS:
        value = response.header(name)
        if value is not None:
            headers[name] = _placeholders(value, known)
    if response.header('last-modified') is not None:
        headers['last-modified'] = '<date>'
    text = _placeholders(response.body.decode('utf-8', 'replace'), known)
    for pattern in _UNORDERED_IN_MESSAGES:
        text = pattern.sub(_sort_names, text)
    try:
        body = _sorted(json.loads(text))
    except ValueError:
        body = text
    return {'status': response.status, 'headers': headers, 'body': body}


def short(normalised, width=300):
    """One line for a report."""
    text = '%d %s %s' % (normalised['status'],
                         json.dumps(normalised['headers'], sort_keys=True),
                         json.dumps(normalised['body'], sort_keys=True))
    return text if len(text) <= width else text[:width] + '...'


# Listed divergences ----------------------------------------------------

@dataclasses.dataclass
class Case:
    """One request and both normalised answers, for the rules."""

    method: str
    path: str
    reference: dict
    lite: dict
    backend: str
    has_sharing: bool

    @property
    def route(self):
        return self.path.partition('?')[0]

    @property
    def query(self):
        return urllib.parse.parse_qsl(self.path.partition('?')[2],
                                      keep_blank_values=True)

    def error_detail(self, which):
        """The error's detail (or the whole text of a non-JSON answer)."""
        if isinstance(which['body'], str):
            return which['body']
        try:
            return which['body']['errors'][0]['detail']
        except (KeyError, IndexError, TypeError):
            return None


def _candidates(answer):
    return [json.dumps(request, sort_keys=True)
            for request in answer['body'].get('allocation_requests', [])]


def _same_but(case, *fields):
    """Both answers equal once ``fields`` of the body are left out."""
    def strip(answer):
        body = answer['body']
        if isinstance(body, dict):
            body = {k: v for k, v in body.items() if k not in fields}
        return dict(answer, body=body)
    return strip(case.reference) == strip(case.lite)


def _groups(case):
    """{suffix: set of classes} of a candidates request."""
    groups = {}
    for key, value in case.query:
        if key.startswith('resources'):
            groups[key[len('resources'):]] = {
                item.split(':')[0] for item in value.split(',')}
    return groups


def candidate_order(case):
    """"Candidate order": with ``limit`` the reference keeps an arbitrary
    subset; the two answers keep as many candidates, and the same
    candidates once those are compared without their order."""
    if case.route != '/allocation_candidates' or not any(
            key == 'limit' for key, _ in case.query):
        return False
    if case.reference['status'] != 200 or case.lite['status'] != 200:
        return False
    return (len(_candidates(case.reference)) == len(_candidates(case.lite))
            and _same_but(case, 'allocation_requests', 'provider_summaries'))


def sharing_serves_unsuffixed_group(case):
    """"Sharing providers serving the unsuffixed group alone": an
    unsuffixed group with suffixed ones, in a world with sharing
    providers; placement_lite's candidates include all of the reference's
    and the summaries of the providers they name (with ``limit``: it keeps
    more of them, within the limit)."""
    groups = _groups(case)
    if case.route != '/allocation_candidates' or '' not in groups or len(
            groups) < 2 or not case.has_sharing:
        return False
    if case.reference['status'] != 200 or case.lite['status'] != 200:
        return False
    reference, lite = _candidates(case.reference), _candidates(case.lite)
    limits = [int(value) for key, value in case.query
              if key == 'limit' and value.isdigit()]
    if limits:
        # Each answer keeps its own subset: the reference's has fewer.
        return len(reference) < len(lite) <= limits[-1]
    if not set(reference) < set(lite):
        return False
    summaries = case.lite['body'].get('provider_summaries', {})
    return all(summaries.get(uuid) == summary for uuid, summary in
               case.reference['body'].get('provider_summaries', {}).items())


def amounts_summed_once(case):
    """"Amounts asked by several groups are summed once": one class asked
    by two groups; the reference's answer varies from run to run."""
    groups = _groups(case)
    if case.route != '/allocation_candidates' or len(groups) < 2:
        return False
    classes = [name for names in groups.values() for name in names]
    return (len(classes) != len(set(classes))
            and case.reference['status'] == case.lite['status'] == 200)


def duplicate_inventory(case):
    """"A duplicate class in POST inventories does not quote SQL"."""
    reference = case.error_detail(case.reference) or ''
    lite = case.error_detail(case.lite) or ''
    return (case.method == 'POST' and case.route.endswith('/inventories')
            and case.reference['status'] == case.lite['status'] == 409
            and 'Update conflict: (' in reference
            and 'already has inventory of class' in lite)


def usages_undecodable_query(case):
    """"GET /usages with a query string that is not UTF-8": the reference
    fails with a 500; placement_lite answers 400, as other routes do."""
    return (case.route == '/usages' and case.reference['status'] == 500
            and "codec can't decode" in (case.error_detail(
                case.reference) or '')
            and case.lite['status'] == 400
            and 'Invalid query string parameters: ' in (case.error_detail(
                case.lite) or ''))


def usages_grouping_on_postgresql(case):
    """"GET /usages from microversion 1.38 on PostgreSQL": the reference's
    query is refused by PostgreSQL (a 500); placement_lite answers."""
    return (case.route == '/usages' and case.backend == 'postgresql'
            and case.reference['status'] == 500
            and 'GroupingError' in (case.error_detail(case.reference) or '')
            and case.lite['status'] == 200)


def forbidden_trait_names_on_postgresql(case):
    """"Forbidden traits of a group served by several providers of a
    tree": the reference compares trait ids with trait names, which
    PostgreSQL refuses (a 500); placement_lite answers."""
    return (case.route == '/allocation_candidates'
            and case.backend == 'postgresql'
            and case.reference['status'] == 500
            and 'rptt_forbidden' in (case.error_detail(case.reference) or '')
            and case.lite['status'] == 200)


LISTED = {
    'candidate-order': (candidate_order, 'Candidate order'),
    'sharing-unsuffixed': (sharing_serves_unsuffixed_group,
                           'Sharing providers serving the unsuffixed group '
                           'alone'),
    'summed-amounts': (amounts_summed_once,
                       'Amounts asked by several groups are summed once'),
    'duplicate-inventory': (duplicate_inventory,
                            'A duplicate class in POST inventories does not '
                            'quote SQL'),
    'usages-undecodable-query': (usages_undecodable_query,
                                 'GET /usages with a query string that is '
                                 'not UTF-8'),
    'usages-postgresql': (usages_grouping_on_postgresql,
                          'GET /usages from microversion 1.38 on '
                          'PostgreSQL'),
    'forbidden-trait-names': (forbidden_trait_names_on_postgresql,
                              'Forbidden traits of a group served by '
                              'several providers of a tree'),
}


def listed(case):
    """The name of the listed divergence ``case`` is, or None."""
    for name, (rule, _section) in LISTED.items():
        if rule(case):
            return name
    return None
