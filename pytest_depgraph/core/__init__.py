"""The graph core: no pytest, no tests, nothing from the rest of the package.

The dependency graph's storage and its algorithms (one module each), the walk, the plan,
shards, the timeline and xdist's work units as groups.
"""
