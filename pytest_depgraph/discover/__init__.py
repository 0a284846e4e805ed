"""Discovery: the dependencies between tests that nobody declared, found by running orders.

``--depgraph-discover`` runs the selected tests in a few orders consistent with the declared
graph, each in a fresh process, and minimises what an order exposed to one other test:
:mod:`.orders` (the orders, pure), :mod:`.search` (minimisation and verification, pure,
driven by an injected runner), :mod:`.children` (the child processes, one list a slot at a
time), :mod:`.gateways` (the slots on execnet gateways of ``-n`` / ``--tx``), :mod:`.server`
(a slot's side, here or on a gateway: each list in a fresh session, its record sent back),
:mod:`.collected` (the session each slot collects in once and forks each list from),
:mod:`.zygote` (where that session cannot serve, the process each list's whole session is
forked from), :mod:`.child` (the child's side: the order kept, the outcomes recorded),
:mod:`.findings` (the findings in words and JSON), :mod:`.discovery` (the session that ties
them together).
"""
