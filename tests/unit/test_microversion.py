import pytest

from placement_lite import microversion


def test_reference_versions_are_1_0_to_1_39():
    versions = microversion.versions(enable_extensions=False)
    assert versions[0] == '1.0'
    assert versions[-1] == '1.39'
    assert len(versions) == 40


def test_extensions_add_1_40_to_1_44():
    assert microversion.versions(enable_extensions=True)[-5:] == [
        '1.40', '1.41', '1.42', '1.43', '1.44']


def test_version_is_a_comparable_tuple_written_as_text():
    assert microversion.NESTED_PROVIDERS == (1, 14)
    assert microversion.NESTED_PROVIDERS > microversion.PROVIDERS_RESOURCES
    assert str(microversion.NESTED_PROVIDERS) == '1.14'


def test_every_served_version_is_a_named_feature():
    named = {value for name, value in vars(microversion).items()
             if isinstance(value, microversion.Version)}
    assert sorted(str(version) for version in named) == sorted(
        microversion.versions(enable_extensions=True))


SCHEMAS = [(microversion.CONSUMER_TYPES, 'newest'),
           (microversion.NESTED_PROVIDERS, 'nested'),
           (microversion.MINIMUM, 'first')]


@pytest.mark.parametrize('version, expected', [
    ((1, 0), 'first'), ((1, 13), 'first'), ((1, 14), 'nested'),
    ((1, 37), 'nested'), ((1, 38), 'newest'), ((1, 40), 'newest')])
def test_schema_for_takes_the_newest_in_force(version, expected):
    assert microversion.schema_for(version, SCHEMAS) == expected


def test_schemas_since_keeps_each_version_where_the_schema_changes():
    def build(version):
        return {'tree': version >= microversion.NESTED_PROVIDERS}
    assert microversion.schemas_since(microversion.PROVIDER_AGGREGATES,
                                      build) == [
        (microversion.NESTED_PROVIDERS, {'tree': True}),
        (microversion.PROVIDER_AGGREGATES, {'tree': False})]
