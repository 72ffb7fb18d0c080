"""Device profile creation under a concurrent writer."""

from placement_lite import errors
from placement_lite.domain import device_profiles


def test_name_taken_between_check_and_insert(environment, monkeypatch):
    """A concurrent creator of the same name makes the insert fail on the
    unique constraint: still a 409, not a 500."""
    body = {'name': 'raced', 'groups': [{'resources:VGPU': '1'}]}
    assert environment.request('POST', '/device_profiles', body)[0] == 201
    monkeypatch.setattr(device_profiles.profiles_db, 'name_exists',
                        lambda conn, name: False)
    status, _headers, error = environment.request(
        'POST', '/device_profiles', body)
    assert status == 409
    assert error['errors'][0]['code'] == errors.DEVICE_PROFILE_DUPLICATE_NAME
