"""The project's tests (the README gives the command that runs them).

pytest rewrites the asserts of every module of an installed plugin's distribution (hypothesis's
74 modules among them) and keeps what it rewrote beside each module only where byte code is
written. Where ``PYTHONDONTWRITEBYTECODE`` is set, each process of the session rewrote them
again as it started: a ``--collect-only`` of this suite took 3.9 s of CPU, 1.2 s once they are
kept. This package is imported first in every process of the session, before ``conftest.py``
imports hypothesis: the controller keeps what it rewrites, before it starts the workers, which
read it.
"""

import sys

sys.dont_write_bytecode = False
