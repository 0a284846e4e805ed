"""A process that forks a fresh pytest session for each list of tests it is sent.

A slot's lists are forked after one collection (:mod:`.collected`); where that session cannot
serve (it did not collect, or ended, or a list names a test it did not collect), this process
is started for the slot (``python -m pytest_depgraph.discover.zygote``, in the session's
folder and environment): it imports pytest and the installed plugins, then waits. For each
request, one JSON line ``{"args": [...], "log": path}`` on its standard input, it forks: the
child points its standard output and error at ``log`` and runs ``pytest.main(args)``, with
the random module seeded afresh, as a process started for it would be; the zygote answers
``{"code": exit code}`` when the child ended. The child is a new process that has run no test
and imported no test module or conftest: it starts a session without paying again for the
interpreter and the plugins' imports.
"""

from __future__ import annotations

import gc
import json
import os
import sys


def serve() -> None:
    from pytest_depgraph.hosts.pytest import import_pytest_plugins

    import_pytest_plugins()
    freeze_before_forks()
    requests = sys.stdin
    answers = os.fdopen(os.dup(sys.stdout.fileno()), "w", encoding="utf-8")
    for line in requests:
        request = json.loads(line)
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:  # the child: never returns
            _child(request["args"], request["log"], answers.fileno())
        _, status = os.waitpid(pid, 0)
        code = os.waitstatus_to_exitcode(status) if hasattr(os, "waitstatus_to_exitcode") else (
            os.WEXITSTATUS(status) if os.WIFEXITED(status) else -os.WTERMSIG(status))
        answers.write(json.dumps({"code": code}) + "\n")
        answers.flush()


def freeze_before_forks() -> None:
    """Leave what this process holds out of every forked child's garbage collections.

    pytest collects garbage at each session's end; in a forked child, that collection went
    through every object the parent had made and wrote to each one's page, copying it: a
    discovery of 200 tests (``bench/discover_bench.py --sizes 200 --workers 0``) took 36 s of
    CPU with it, 14 s without. Python's documented way is ``gc.freeze()`` before the forks.
    An object made before them that a child lets go of in a reference cycle is not collected
    in the child: its memory goes back when the child ends."""
    gc.collect()
    gc.freeze()


def _child(args: list[str], log: str, answers: int) -> None:
    code = 3
    try:
        import random

        os.close(answers)
        output = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        nothing = os.open(os.devnull, os.O_RDONLY)
        os.dup2(nothing, 0)
        os.dup2(output, 1)
        os.dup2(output, 2)
        os.close(output)
        os.close(nothing)
        sys.stdin = open(os.devnull, encoding="utf-8")  # noqa: SIM115
        random.seed()  # a process started for the session would not share the zygote's state
        import pytest

        code = int(pytest.main(args))
    except BaseException:  # the child must end here, whatever happened
        import traceback

        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


if __name__ == "__main__":
    serve()
