"""[placement_database] options that shape the connection."""

from placement_lite.db import api as db_api
from tests import harness


def test_connection_parameters_are_added_to_both_urls():
    conf = harness.make_conf(**{
        'placement_database.connection':
            'postgresql+psycopg2://placement:secret@db1/placement?sslmode=require',
        'placement_database.slave_connection':
            'postgresql+psycopg2://placement:secret@db2/placement',
        'placement_database.connection_parameters':
            'connect_timeout=5&application_name=placement'})

    database = db_api.from_conf(conf)

    assert database.url == (
        'postgresql+psycopg2://placement:secret@db1/placement?'
        'application_name=placement&connect_timeout=5&sslmode=require')
    assert database.replica_engine.url.render_as_string(
        hide_password=False) == (
        'postgresql+psycopg2://placement:secret@db2/placement?'
        'application_name=placement&connect_timeout=5')


def test_without_connection_parameters_the_url_is_kept_as_written():
    url = 'sqlite:////tmp/placement-lite-options.sqlite'
    conf = harness.make_conf(**{'placement_database.connection': url})

    assert db_api.from_conf(conf).url == url
