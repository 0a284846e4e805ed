"""The build's phases that are modules of their own, each named after what it does (the others
are functions of :mod:`pytest_depgraph.collect.build`)."""
