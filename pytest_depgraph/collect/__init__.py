"""Collection: declarations into a validated plan.

The ``depends_on`` marker and decorator, the other plugins' markers, the collection context
they read, pinned groups, widened selection, and the build.
"""
