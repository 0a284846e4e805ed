"""The graph core: no pytest, nothing from the rest of the package.

The dependency graph and its algorithms, the walk and its dispatch, the plan, target
resolution, shards and the timeline.
"""
