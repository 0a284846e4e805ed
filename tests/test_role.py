"""role(config): which process this is, from what pytest-xdist leaves on the config."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from pytest_depgraph.run.role import WORKERINPUT_KEY, Role, role


def _config(plugins: tuple[str, ...] = (), **attributes: Any) -> Any:
    manager = SimpleNamespace(has_plugin=lambda name: name in plugins)
    return SimpleNamespace(pluginmanager=manager, **attributes)


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        (_config(), Role.SERIAL),
        (_config(("dsession",)), Role.CONTROLLER),
        (_config(workerinput={}), Role.WORKER),
        (_config(workerinput={WORKERINPUT_KEY: "not a dict"}), Role.WORKER),
        (_config(workerinput={WORKERINPUT_KEY: {"walk": False}}), Role.LINKED_WORKER),
        (_config(workerinput={WORKERINPUT_KEY: {"walk": True}}), Role.WALKED_WORKER),
    ],
)
def test_role(config: Any, expected: Role) -> None:
    assert role(config) is expected
    assert role(config).is_worker == hasattr(config, "workerinput")
    assert role(config).sends_plan == (expected in (Role.LINKED_WORKER, Role.WALKED_WORKER))
