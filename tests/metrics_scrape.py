"""Reading a /metrics answer in tests: every sample by name and labels."""

from prometheus_client import parser


def samples(text):
    """{(sample name, frozenset of (label, value)): value} of an exposition."""
    return {(sample.name, frozenset(sample.labels.items())): sample.value
            for family in parser.text_string_to_metric_families(text)
            for sample in family.samples}


def value(scraped, name, **labels):
    """The value of one sample of ``scraped`` (see samples); 0 when the
    series was never counted."""
    return scraped.get((name, frozenset(labels.items())), 0)


def family_names(text):
    """The names of the metric families of an exposition."""
    return {family.name
            for family in parser.text_string_to_metric_families(text)}
