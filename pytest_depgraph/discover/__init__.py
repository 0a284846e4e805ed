"""Discovery: the dependencies between tests that nobody declared, found by running orders.

``--depgraph-discover`` runs the selected tests in a few orders consistent with the declared
graph, each in a fresh process, and minimises what an order exposed to one other test:
:mod:`.orders` (the orders, pure), :mod:`.search` (minimisation and verification, pure,
driven by an injected runner), :mod:`.children` (the child processes), :mod:`.zygote` (the
process each slot forks them from), :mod:`.child` (the child's side: the order kept, the
outcomes recorded), :mod:`.findings` (the findings in words and JSON), :mod:`.discovery` (the
session that ties them together).
"""
