"""Every route placement_lite serves is requested, with each method it
answers, by the gabbi files (tests/test_gabbits.py, which the edit-test
loop ``-m "not slow"`` runs): a route added without a gabbi test fails
here."""

from gabbi import utils

from placement_lite import routes
from tests import test_gabbits

METHODS = ('GET', 'PUT', 'POST', 'DELETE', 'PATCH', 'HEAD', 'OPTIONS')


def _requests(path):
    """(method, path without its query) of each test of a gabbi file."""
    suite = utils.load_yaml(yaml_file=path, safe=True)
    for test in suite['tests']:
        method = test.get('method', 'GET')
        url = test.get('url')
        for name in METHODS:
            if name in test:
                method, url = name, test[name]
        yield method, url.split('?')[0]


def _matches(template, path):
    """Whether ``path`` is one of ``template``'s; a segment made by a
    gabbi substitution (``$...``) stands for any value of a field."""
    wanted, given = template.strip('/').split('/'), path.strip('/').split('/')
    return len(wanted) == len(given) and all(
        segment.startswith('{') if value.startswith('$') else (
            segment.startswith('{') or segment == value)
        for segment, value in zip(wanted, given))


def test_every_route_and_method_has_a_gabbi_test():
    requested = {request for path in test_gabbits.GABBITS
                 for request in _requests(path)}
    missing = []
    for template, resource in routes.served(enable_extensions=True):
        for method in (name[3:].upper() for name in dir(resource)
                       if name.startswith('on_')):
            if not any(method == sent and _matches(template, path)
                       for sent, path in requested):
                missing.append('%s %s' % (method, template))
    assert missing == []


def test_the_gabbi_files_are_in_the_edit_test_loop():
    marks = test_gabbits.pytestmark
    assert 'slow' not in [mark.name for mark in (
        marks if isinstance(marks, list) else [marks])]
