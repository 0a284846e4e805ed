"""The project's tests. Byte code is written for every module the suite imports from here on,
whatever PYTHONDONTWRITEBYTECODE says, as the pytest processes it generates write it
(``conftest.py``'s ``pytester``): where pip compiled nothing (the README's ``--no-compile``),
networkx and the test modules are compiled once, by the first process that imports them,
not again by each xdist worker (networkx: 0.98 against 0.25 s of CPU to import uncompiled)."""

import sys

sys.dont_write_bytecode = False
