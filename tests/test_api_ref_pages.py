"""api-ref/reference/*.md are what tests/openapi/pages.py writes now: the
document's routes, and examples that the cited gabbi tests still answer,
byte for byte (after the pages' renumbering of uuids and times)."""

import os

import pytest

from tests.openapi import pages


def test_every_operation_has_an_example():
    document = pages.load_document()
    operations = {'%s %s' % (method.upper(), path)
                  for path, methods in document['paths'].items()
                  for method in methods}
    assert sorted(operations - set(pages.cited_examples())) == []


@pytest.mark.slow
def test_pages_are_current():
    """Fails when the document, a cited test or its answer changed: run
    ``python -m tests.openapi.pages`` and commit the pages."""
    cited = pages.cited_examples()
    files = sorted({file_name for file_name, _test in cited.values()})
    recorded = pages.record([os.path.join(pages.GABBITS, name)
                             for name in files])
    expected = pages.render(pages.load_document(),
                            pages.choose(recorded, cited))
    for name, text in expected.items():
        with open(os.path.join(pages.PAGES, name)) as handle:
            assert handle.read() == text, name
