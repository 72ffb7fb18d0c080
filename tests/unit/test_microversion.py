from placement_lite import microversion


def test_reference_versions_are_1_0_to_1_39():
    versions = microversion.versions(enable_extensions=False)
    assert versions[0] == '1.0'
    assert versions[-1] == '1.39'
    assert len(versions) == 40


def test_extensions_add_1_40_and_1_41():
    assert microversion.versions(enable_extensions=True)[-2:] == [
        '1.40', '1.41']


def test_parse():
    assert microversion.parse('1.38') == (1, 38)
