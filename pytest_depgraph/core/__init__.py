"""The graph core: no pytest, no tests, nothing from the rest of the package.

The dependency graph's storage and its algorithms (one module each), the walk and its dispatch,
the plan, shards and the timeline.
"""
