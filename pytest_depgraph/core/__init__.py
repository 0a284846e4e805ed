"""The core, no pytest, no tests, nothing from the rest of the package: the graph algorithms
(:mod:`.graph`), the parallel walk (:mod:`.walk`), and here the run's model: the plan, its
shards and its timeline.

The dependency graph's storage and its algorithms (one module each), the walk and its dispatch,
the plan, shards and the timeline.
"""
