"""The graph core: no pytest, nothing from the rest of the package.

The dependency graph and its algorithms, the walk, the plan, target resolution, shards, the
timeline and xdist's work units as groups.
"""
