"""The error document matches the reference's rendering byte for byte."""

from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
import microversion_parse
import pytest
import webob.exc

from placement_lite import errors
from placement_lite import microversion


def _version(text):
    return microversion_parse.extract_version(
        {'openstack-api-version': 'placement %s' % text}, 'placement',
        microversion.versions(enable_extensions=True))


def test_detail_text_for_a_plain_status():
    assert errors.detail_text(404, 'No resource provider with uuid x found',
                              {}) == ('The resource could not be found.\n\n'
                                      ' No resource provider with uuid x found  ')


def test_detail_text_for_method_not_allowed_names_the_method():
    assert errors.detail_text(405, 'why', {'REQUEST_METHOD': 'PATCH'}) == (
        'The method PATCH is not allowed for this resource. \n\n why')


def test_detail_text_for_unsupported_media_type_names_the_type():
    assert errors.detail_text(415, 'why', {'CONTENT_TYPE': 'text/plain'}) == (
        'The request media type text/plain is not supported by this server. '
        '\n\n why')


def test_error_document_has_no_code_before_1_23():
    environ = {microversion.ENVIRON: _version('1.22'),
               errors.REQUEST_ID_ENVIRON: 'req-1'}
    assert errors.error_document(409, 'd', environ, code='placement.x') == {
        'errors': [{'status': 409, 'title': 'Conflict', 'detail': 'd',
                    'request_id': 'req-1'}]}


def test_error_document_has_the_code_from_1_23():
    environ = {microversion.ENVIRON: _version('1.23')}
    document = errors.error_document(409, 'd', environ,
                                     code=errors.CONCURRENT_UPDATE)
    assert document['errors'][0]['code'] == 'placement.concurrent_update'


def test_error_document_defaults_the_code():
    environ = {microversion.ENVIRON: _version('1.39')}
    document = errors.error_document(400, 'd', environ)
    assert document['errors'][0]['code'] == 'placement.undefined_code'


def test_plain_text_415_names_a_missing_content_type_none():
    """webob's page, as the reference's: a request without Content-Type
    is "media type None" there too (found by tests/differential)."""
    assert errors.render(
        415, 'The media type None is not supported, use application/json',
        {'REQUEST_METHOD': 'PUT', 'HTTP_ACCEPT': 'text/plain'}) == (
        'text/plain; charset=UTF-8',
        '415 Unsupported Media Type\n\nThe request media type None is not '
        'supported by this server. \n\n The media type None is not '
        'supported, use application/json')


@settings(max_examples=3000, deadline=None, database=None)
@given(st.lists(st.sampled_from(['<', '>', 'b', 'r', 'B', 'R', '<br', '<BR>',
                                 '<!--', '-->', '\n', '\r', 'x', ' ']),
                max_size=14).map(''.join))
@pytest.mark.slow
def test_tags_are_stripped_as_webob_strips_them(message):
    assert errors.detail_text(400, message, {}) == (
        '%s\n\n %s  ' % (errors._EXPLANATIONS[400],
                         webob.exc.strip_tags(message)))


def test_a_detail_of_openings_only_is_kept_whole():
    """webob's regex looks for a '>' after each '<': quadratic, seconds
    for 64 KiB of '<' (the longest detail)."""
    message = '<' * errors.MAX_DETAIL_LENGTH
    assert errors.detail_text(400, message, {}).endswith(message + '  ')
