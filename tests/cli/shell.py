"""Runs ``openstack`` commands for tests/cli: each in a process of its own,
as the ``openstack`` command does (openstackclient.shell.main), forked
from this one, which has made the imports and read the configuration
once.

A process per command matters: osc-lib keeps the clients a command made
for the rest of the process (placement_lite's at the microversion that
command asked for), as do other caches of a one-command process.

Each line of stdin is a JSON list of arguments; each answer, a JSON line
``[exit status, stdout, stderr]``.
"""

import contextlib
import io
import json
import os
import sys

from openstackclient import shell


def run(argv):
    """(exit status, stdout, stderr) of ``openstack *argv``, run here."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status = shell.main(argv)
        except SystemExit as exc:  # argparse refusing the arguments
            status = exc.code if isinstance(exc.code, int) else 1
    return status, out.getvalue(), err.getvalue()


def forked(argv):
    """run(argv) in a child process."""
    reading, writing = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(reading)
            with os.fdopen(writing, 'w') as answer:
                json.dump(run(argv), answer)
        finally:
            os._exit(0)
    os.close(writing)
    with os.fdopen(reading) as answer:
        result = json.load(answer)
    os.waitpid(pid, 0)
    return result


def main():
    # Answers on a stream of their own: nothing a command writes to the
    # process's stdout can come between them.
    answers = os.fdopen(os.dup(sys.stdout.fileno()), 'w')
    sys.stdout = sys.stderr
    # Loads the configuration and the plugins, making no client: each
    # command then takes tens of milliseconds instead of 0.3 s.
    run(['configuration', 'show'])
    for line in sys.stdin:
        answers.write(json.dumps(forked(json.loads(line))) + '\n')
        answers.flush()


if __name__ == '__main__':
    main()
