"""The words of the shared resources' collection errors and warnings: ``resource_lock``,
``exclusive`` and ``weight`` as declared (:mod:`.problems` holds the words of the others and
how every error is grouped and capped)."""

from __future__ import annotations

from collections.abc import Sequence

from pytest_depgraph.plurals import noun

_LOCK_USAGE = ("resource_lock takes a name, mode='write' or 'read' and scope='test', 'class', "
               "'module', 'package' or 'session'")


def _close(text: str, names: Sequence[str]) -> str:
    """" Did you mean 'x'?" for the names close to ``text`` ("" for none)."""
    import difflib  # only for an error

    close = difflib.get_close_matches(text, names, n=3, cutoff=0.6)
    return " Did you mean " + " or ".join(map(repr, close)) + "?" if close else ""


def lock_keywords(names: Sequence[str]) -> str:
    """``resource_lock`` given keywords it does not take (``names``, shortened, sorted)."""
    written = ", ".join(f"{name}=" for name in names)
    return f"unknown keyword {noun(len(names), 'argument')} {written}; {_LOCK_USAGE}"


def lock_arguments(count: int) -> str:
    """``resource_lock`` given more positional arguments than name, mode and scope."""
    return f"{count} arguments given; {_LOCK_USAGE}"


def lock_twice(name: str) -> str:
    """``resource_lock``'s ``name`` given both by position and by keyword."""
    return f"{name} given twice, by position and by keyword; {_LOCK_USAGE}"


def lock_name(value: str | None) -> str:
    """A lock without a name, or whose name (``value``: how it reads) is not a non-empty
    string."""
    if value is None:
        return "resource_lock() names no resource; give its name, a string such as 'db'"
    return (f"the resource name {value} is not a non-empty string; name the resource with a "
            "string such as 'db'")


def unlisted_resource(name: str, known: Sequence[str]) -> str:
    """A lock's ``name`` is not among the resources ``depgraph_resources`` lists."""
    listed = ", ".join(map(repr, known)) if known else "none"
    return (f"resource {name!r} is not in depgraph_resources (it lists {listed}): add it there "
            f"or correct the name.{_close(name, known)}")


def not_one_of(what: str, value: str, allowed: Sequence[str], text: str) -> str:
    """``{what}=`` (``value``: how it reads; ``text``: the string, "" for another type) is
    none of ``allowed``."""
    choices = [f"{what}={a!r}" for a in allowed]
    written = ", ".join(choices[:-1]) + " or " + choices[-1]
    return f"{what}={value} is not valid; use {written}.{_close(text, allowed)}"


EXCLUSIVE_ARGUMENTS = (
    "exclusive takes no argument; write @pytest.mark.exclusive (the test runs with no other "
    "test running), or @pytest.mark.resource_lock(name) for a named resource"
)


def bad_weight(value: str | None) -> str:
    """``weight`` not given one whole number of at least 1 (``value``: how it reads; None:
    not one argument)."""
    got = "" if value is None else f", not {value}"
    return ("weight takes one whole number of at least 1, the slots of --depgraph-parallelism "
            f"the test counts, e.g. @pytest.mark.weight(2){got}")


def lock_label(marker: str, fixture: str = "") -> str:
    """What an error calls a marker of shared resources, or the decorator on ``fixture``."""
    return f"@resource_lock on fixture '{fixture}'" if fixture else f"@pytest.mark.{marker}"


def second_weight(nodeid: str, k: int, first: int, first_where: str) -> str:
    """A second ``weight`` mark applies to a test."""
    return (f"weight({k}) is a second weight mark on {nodeid}, which weight({first}) at "
            f"{first_where} already weighs; keep one weight mark for the test (on the test, "
            "or on its class or module for all of their tests).")


def class_lock_outside_class(nodeid: str) -> str:
    """A lock of class scope on a test outside any class."""
    return (f"scope='class' on {nodeid}, which is not in a class: a class block holds the "
            "tests of one class. Write scope='module' for the module's tests as one block, "
            "or leave scope out for each test on its own.")


def lone_resource(name: str, test: str, close: str, holders: int) -> str:
    """Resource ``name``, held by ``test`` alone, is close to ``close``, which ``holders``
    tests hold: a typo would be a second lock."""
    verb = "holds" if holders == 1 else "hold"
    return (
        f"depgraph: resource {name!r} is held by {test} alone, and its name is close to "
        f"{close!r}, which {holders:,} {noun(holders, 'test')} {verb}: if it is a typo, the test "
        f"does not wait for {close!r}. Correct the name, or list the resources in the ini "
        "option depgraph_resources (then any other name is an error)."
    )
