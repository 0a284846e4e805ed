"""Collection: declarations into a validated plan.

The readers of every way to declare dependencies, the collection context they read, the build
in phases, pinned groups, widened selection, and the words of every collection problem.
"""
