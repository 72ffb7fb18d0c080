"""Where placement.conf is looked for, as the reference looks: a named
directory must hold it, and without one the usual places are read."""

import os
import subprocess
import sys

from oslo_config import cfg
import pytest

from placement_lite import conf as config
from placement_lite.db import migrate

pytestmark = pytest.mark.slow

PLACEMENT_LITE = os.path.join(os.path.dirname(sys.executable),
                              'placement-lite')


def _run(tmp_path, *args, config_dir=None):
    """``placement-lite`` with HOME (and the data directory an unset
    connection defaults to) inside ``tmp_path``."""
    environ = {name: value for name, value in os.environ.items()
               if name != 'OS_PLACEMENT_CONFIG_DIR'}
    environ.update(HOME=str(tmp_path / 'home'),
                   XDG_DATA_HOME=str(tmp_path / 'data'))
    if config_dir is not None:
        environ['OS_PLACEMENT_CONFIG_DIR'] = config_dir
    return subprocess.run([PLACEMENT_LITE, *args], env=environ,
                          capture_output=True, text=True)


def test_a_named_directory_without_placement_conf_is_an_error(tmp_path):
    """A typo in OS_PLACEMENT_CONFIG_DIR stops the command with one line
    naming the file, before any database is created."""
    missing = tmp_path / 'etc' / 'placemnt'

    synced = _run(tmp_path, 'db', 'sync', config_dir=str(missing))

    assert synced.returncode == 1
    assert synced.stdout == ''
    assert synced.stderr == (
        'placement-lite: error: Failed to find some config files: %s\n'
        % (missing / 'placement.conf'))
    assert not (tmp_path / 'data').exists()


def test_the_named_directory_is_read(tmp_path):
    config_dir = tmp_path / 'etc'
    config_dir.mkdir()
    database = tmp_path / 'named.sqlite'
    (config_dir / 'placement.conf').write_text(
        '[placement_database]\nconnection = sqlite:///%s\n' % database)

    synced = _run(tmp_path, 'db', 'sync', config_dir=str(config_dir))

    assert synced.returncode == 0, synced.stderr
    assert synced.stdout.strip() == migrate.head_revision()
    assert database.exists()


def test_without_a_named_directory_the_home_placement_conf_is_read(
        tmp_path):
    """~/.placement/placement.conf is one of the places the reference
    reads when OS_PLACEMENT_CONFIG_DIR is unset."""
    home_config = tmp_path / 'home' / '.placement'
    home_config.mkdir(parents=True)
    database = tmp_path / 'home.sqlite'
    (home_config / 'placement.conf').write_text(
        '[placement_database]\nconnection = sqlite:///%s\n' % database)

    synced = _run(tmp_path, 'db', 'sync')

    assert synced.returncode == 0, synced.stderr
    assert database.exists()
    assert not (tmp_path / 'data').exists()


def test_the_application_does_not_start_without_its_named_file(
        tmp_path, monkeypatch):
    """The WSGI entry point loads configuration the same way: a server
    pointed at a directory without placement.conf fails to load the app
    (and, with need-app, exits) instead of serving an empty database."""
    monkeypatch.setenv('OS_PLACEMENT_CONFIG_DIR', str(tmp_path))

    with pytest.raises(cfg.ConfigFilesNotFoundError):
        config.load()


def test_a_blank_directory_name_means_the_usual_places():
    assert config.config_files({'OS_PLACEMENT_CONFIG_DIR': '  '}) is None
    assert config.config_files({}) is None
    assert config.config_files({'OS_PLACEMENT_CONFIG_DIR': '/etc/p'}) == [
        '/etc/p/placement.conf']


@pytest.mark.parametrize('connection, error', [
    ('postgresql+psycopg2://placement:secret@127.0.0.1:1/placement',
     'cannot reach the database of [placement_database] connection '
     '(postgresql+psycopg2://placement:***@127.0.0.1:1/placement): '
     'connection to server at "127.0.0.1", port 1 failed: '
     'Connection refused'),
    ('not a url',
     '[placement_database] connection cannot be used: Could not parse '
     'SQLAlchemy URL from given URL string'),
    ('mysql+nosuchdriver://placement@db/placement',
     "[placement_database] connection cannot be used: Can't load plugin: "
     'sqlalchemy.dialects:mysql.nosuchdriver'),
])
def test_a_database_that_cannot_be_used_is_one_line(tmp_path, connection,
                                                    error):
    """No traceback: the option, the database (password hidden) and the
    reason."""
    config_dir = tmp_path / 'etc'
    config_dir.mkdir()
    (config_dir / 'placement.conf').write_text(
        '[placement_database]\nconnection = %s\n' % connection)

    for command in (('db', 'sync'), ('db', 'version')):
        ran = _run(tmp_path, *command, config_dir=str(config_dir))

        assert (ran.returncode, ran.stdout, ran.stderr) == (
            1, '', 'placement-lite: error: %s\n' % error)
