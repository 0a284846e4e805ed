"""One door per host: the only modules that touch the private API of another package.

``xdist.py`` holds every touch of pytest-xdist's internals, ``pytest.py`` every touch of
pytest's, ``dependency.py`` every touch of pytest-dependency's. Each touch is a named function
(or a method of a named door object) whose docstring says which upstream behaviour it relies
on, with a version guard where upstream changed it before, and a canary in
``tests/test_hosts.py`` that fails naming the upstream change. A module of this layer imports
nothing of the package but ``core``.
"""
