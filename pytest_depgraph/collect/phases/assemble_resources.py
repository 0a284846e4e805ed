"""The assemble phase's shared resources: what the tests of the run claim (locks, exclusive,
weights) made the plan's :class:`~pytest_depgraph.core.plan.Resources`, blocks included.

A lock of test scope is the test's own claim. A lock of a wider scope makes its tests a block:
the tests of one class, module, package or of the session (a fixture's lock: its users there)
that hold it with that scope run back to back on one worker, holding it from the first one's
start to the last one's teardown. Without ``depgraph_resources``, a name that one test holds
and that is close to a name more tests hold is warned about: a typo would be a second lock.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import pytest

from pytest_depgraph.collect import problems, resource_problems
from pytest_depgraph.collect.readers.base import Claim, ClaimKind
from pytest_depgraph.collect.readers.peer_reader import warn_at
from pytest_depgraph.collect.resource_markers import Held, Weight
from pytest_depgraph.core.plan import READ, WRITE, Block, Resources


class _Block:
    """A block being gathered: its tests and what it holds."""

    def __init__(self, name: str, where: str, scope: str) -> None:
        self.name, self.where, self.scope = name, where, scope
        self.tests: list[int] = []
        self.claims: dict[str, str] = {}


def resources(
    collected: Sequence[pytest.Item],
    claims: Mapping[int, Sequence[Claim]],
    node_of: Callable[[int], int],
    capacity: Mapping[str, int] | None,
    rootpath: Path,
) -> tuple[Resources, list[problems.Problem]]:
    """The resources of the run's tests (``claims``: by collection position; ``node_of``: the
    plan's node of a position, -1 when not in the run), and the warnings that ``-W error``
    made errors. O(claims)."""
    held: dict[int, dict[str, str]] = {}
    slots: dict[int, int] = {}
    weighed: dict[int, Weight] = {}
    mistakes: dict[str, problems.Problem] = {}  # by message: one for all a mark applies to
    exclusive: list[int] = []
    blocks: dict[tuple[str, str], _Block] = {}
    holders: dict[str, set[int]] = {}
    first: dict[str, tuple[str, int]] = {}
    for position, found in claims.items():
        node = node_of(position)
        if node < 0:
            continue
        for claim in found:
            if claim.kind is ClaimKind.EXCLUSIVE:
                exclusive.append(node)
            elif claim.kind is ClaimKind.WEIGHT:
                weight: Weight = claim.value
                first_weight = weighed.setdefault(node, weight)
                if first_weight is weight:
                    slots[node] = weight.k
                else:
                    _mistake(mistakes, weight.where, resource_problems.second_weight(
                        collected[position].nodeid, weight.k, first_weight.k,
                        first_weight.where))
            elif claim.kind is ClaimKind.LOCK:
                lock: Held = claim.value
                if (lock.scope == "class" and not lock.fixture
                        and collected[position].getparent(pytest.Class) is None):
                    outside = resource_problems.class_lock_outside_class(
                        collected[position].nodeid)
                    _mistake(mistakes, lock.where, outside)
                    continue
                holders.setdefault(lock.name, set()).add(node)
                first.setdefault(lock.name, (lock.where, position))
                if lock.scope == "test":
                    _hold(held.setdefault(node, {}), lock)
                    continue
                scope_id, words = _scope(collected[position], lock.scope)
                key = (scope_id, lock.fixture)
                block = blocks.get(key)
                if block is None:
                    name = f"fixture '{lock.fixture}' ({words})" if lock.fixture else words
                    block = blocks[key] = _Block(name, lock.where, scope_id)
                if not block.tests or block.tests[-1] != node:
                    block.tests.append(node)
                _hold(block.claims, lock)
    made = Resources(
        capacity={name: (capacity or {}).get(name, 1) for name in sorted(holders)},
        claims=held,
        slots={node: k for node, k in slots.items() if k > 1},
        exclusive=sorted(set(exclusive)),
        blocks=[Block(tuple(sorted(set(b.tests))), tuple(sorted(b.claims.items())), b.name,
                      b.where, b.scope) for b in blocks.values()],
    )
    errors = [] if capacity is not None else _lone_names(holders, first, collected, rootpath)
    return made, [*mistakes.values(), *errors]


def _mistake(found: dict[str, problems.Problem], where: str, what: str) -> None:
    """A declaration at ``where`` that cannot be what its writer meant, once per message."""
    message = f"depgraph: {where}: {what}"
    found.setdefault(message, problems.Problem(message, where.rsplit(":", 1)[0]))


def _hold(claims: dict[str, str], lock: Held) -> None:
    """Add ``lock`` to ``claims``: a writer wins over a reader."""
    if claims.get(lock.name) != WRITE:
        claims[lock.name] = WRITE if lock.mode == WRITE else READ


def _scope(item: pytest.Item, scope: str) -> tuple[str, str]:
    """(an id, the words) of the class, module, package or session around ``item`` that a lock
    of ``scope`` covers: outside a class, a class scope is the module's, as for fixtures; outside
    a package, a package scope is the session's."""
    kinds: dict[str, tuple[tuple[str, type[pytest.Collector]], ...]] = {
        "class": (("class", pytest.Class), ("module", pytest.Module)),
        "module": (("module", pytest.Module),),
        "package": (("package", pytest.Package),),
    }
    for word, kind in kinds.get(scope, ()):
        node = item.getparent(kind)
        if node is not None:
            return node.nodeid, f"{word} {node.nodeid}"
    return "", "the session"


def _lone_names(
    holders: Mapping[str, set[int]],
    first: Mapping[str, tuple[str, int]],
    collected: Sequence[pytest.Item],
    rootpath: Path,
) -> list[problems.Problem]:
    """Warn, at its declaration, about each name one test holds that is close to a name more
    tests hold; the warnings ``-W error`` made errors."""
    lone = [name for name, tests in holders.items() if len(tests) == 1]
    if not lone:
        return []
    import difflib  # only a suite with a name held once

    errors = []
    for name in sorted(lone):
        others = [other for other in holders if len(holders[other]) > 1]
        close = difflib.get_close_matches(name, others, n=1, cutoff=0.75)
        if not close:
            continue
        where, position = first[name]
        message = resource_problems.lone_resource(name, collected[position].nodeid, close[0],
                                         len(holders[close[0]]))
        try:
            warn_at(message, rootpath, where)
        except Warning:  # -W error: the warning is an error, reported as one
            text = f"depgraph: {where}: {message.removeprefix('depgraph: ')}"
            errors.append(problems.Problem(text, where.rsplit(":", 1)[0]))
    return errors
