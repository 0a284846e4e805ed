"""What the tests of one walk need besides their dependencies: the plan's resources, blocks and
weights by resource index and pinned group, as the books
(:mod:`pytest_depgraph.core.walk.resource_books`) keep them.

Pure: no pytest. A *claim* is a resource index and whether it writes; a block's claims are its
pinned group's, with the scopes whose teardown ends it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from pytest_depgraph.core.plan import READ, WRITE, Plan

#: a claim: (resource index, whether it writes)
Claim = tuple[int, bool]


@dataclass(frozen=True)
class Claims:
    """What the tests of one walk need besides their dependencies, by resource index."""

    #: per resource: its name and its capacity (most writers at once)
    names: Sequence[str] = ()
    capacity: Sequence[int] = ()
    #: node -> what it holds while it runs (the tests outside blocks)
    tests: Mapping[int, Sequence[Claim]] = field(default_factory=dict)
    #: pinned group -> what the group holds as one block
    blocks: Mapping[int, Sequence[Claim]] = field(default_factory=dict)
    #: node -> the slots of the bound it takes (absent: 1), at most the bound
    slots: Mapping[int, int] = field(default_factory=dict)
    #: nodes that run with nothing beside them
    exclusive: frozenset[int] = frozenset()
    #: (node, the weight it declared) of each test that counts as the bound, being heavier
    clamped: tuple[tuple[int, int], ...] = ()
    #: pinned group -> the node ids of the scopes its blocks cover (:data:`SESSION`: the
    #: session's); a group absent here gives its resources back once its tests are resolved
    scopes: Mapping[int, frozenset[str]] = field(default_factory=dict)


#: the scope of a block of the session (its node id): it lasts as long as its worker
SESSION = ""


def claims_of(plan: Plan, limit: int | None) -> Claims:
    """The claims of a plan whose blocks are pinned groups already
    (:func:`~pytest_depgraph.run.xdist.units.bind_units`): a group that holds a block holds, as one,
    its blocks' resources and those of each of its tests, and the most slots any of its tests
    takes. A weight above ``limit`` counts as ``limit``. O(declarations)."""
    declared = plan.resources
    names = sorted(declared.capacity)
    index = {name: i for i, name in enumerate(names)}
    group_of = {v: g for g, members in enumerate(plan.pinned) for v in members}

    def claim(node: int, name: str, mode: str) -> Claim:
        if name not in index or mode not in (WRITE, READ):
            raise ValueError(f"node {node}: resource {name!r} has no capacity, or mode "
                             f"{mode!r} is neither {WRITE!r} nor {READ!r}")
        return index[name], mode == WRITE

    held: dict[int, dict[int, bool]] = {}
    scopes: dict[int, set[str]] = {}
    for block in declared.blocks:
        group = group_of.get(block.tests[0])
        if group is None or not set(block.tests) <= set(plan.pinned[group]):
            raise ValueError(f"{block.name}: not bound to a pinned group (bind_units)")
        scopes.setdefault(group, set()).add(block.scope)
        mine = held.setdefault(group, {})
        for resource, writes in (claim(block.tests[0], *c) for c in block.claims):
            mine[resource] = mine.get(resource, False) or writes
    slots = {v: k if limit is None else min(k, limit) for v, k in declared.slots.items()}
    tests: dict[int, list[Claim]] = {}
    for node, claims in declared.claims.items():
        found = [claim(node, name, mode) for name, mode in sorted(claims.items())]
        joined = held.get(group_of.get(node, -1))
        if joined is None:
            tests[node] = found
        else:
            for resource, writes in found:
                joined[resource] = joined.get(resource, False) or writes
    return Claims(
        names=names,
        capacity=[declared.capacity[name] for name in names],
        tests=tests,
        blocks={g: sorted(claims.items()) for g, claims in held.items()},
        slots=slots,
        exclusive=frozenset(declared.exclusive),
        clamped=tuple((v, k) for v, k in sorted(declared.slots.items()) if slots[v] < k),
        scopes={g: frozenset(found) for g, found in scopes.items()},
    )
