"""The graph algorithms: storage, components, orders, reduction, paths, disjoint sets; they import
nothing else of the core."""
