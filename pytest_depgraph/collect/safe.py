"""Reading user objects (marker arguments, globals, fixtures) so that they never raise at us.

A marker argument or a module global can be anything: a werkzeug ``LocalProxy`` that raises
``RuntimeError`` on every attribute outside a request, an object whose ``__eq__``, ``__hash__``
or ``__repr__`` raises, a string of a megabyte. Collection reads them only through these
helpers, and describes them without ``repr`` -- an address in a message would differ between
xdist workers, which compare what they built.
"""

from __future__ import annotations

import types
from typing import TYPE_CHECKING, Any

from pytest_depgraph.hosts.pytest import attribute, fixture_name
from pytest_depgraph.plurals import plural

if TYPE_CHECKING:
    from typing import TypeGuard

#: longest text (target string, node id part) shown whole in a message
TEXT_LIMIT = 120

_PLAIN = (int, float, complex, bool, type(None), bytes)


#: ``getattr(obj, name, default)`` that also swallows what a property or proxy raises
attr = attribute


def text_attr(obj: object, name: str) -> str:
    """A string attribute such as ``__name__`` or ``__qualname__``; "" when absent or not a
    string."""
    value = attr(obj, name, "")
    return str.__str__(value) if is_str(value) else ""


def exact_str(value: str) -> str:
    """A ``str`` subclass as a plain ``str`` (its own ``strip``/``__hash__`` are never called)."""
    return str.__str__(value)


def is_str(obj: object) -> TypeGuard[str]:
    return issubclass(type(obj), str)


def is_class(obj: object) -> bool:
    """``inspect.isclass`` without reading ``obj.__class__`` (a proxy may raise there)."""
    return issubclass(type(obj), type)


def is_function(obj: object) -> bool:
    return type(obj) is types.FunctionType


def is_method(obj: object) -> bool:
    return type(obj) is types.MethodType


def shorten(text: str, limit: int = TEXT_LIMIT) -> str:
    """``text`` cut in the middle with an ellipsis when longer than ``limit``, saying how long
    it was."""
    if len(text) <= limit:
        return text
    keep = max(limit - 30, 10)
    head, tail = keep * 2 // 3, keep // 3
    return f"{text[:head]}…{text[-tail:]} ({len(text):,} characters)"


def quoted(text: str, limit: int = TEXT_LIMIT) -> str:
    """A string as a message shows it: quoted like ``repr``, shortened when long."""
    if len(text) <= limit:
        return repr(text)
    head, tail = text[: limit * 2 // 3], text[-limit // 3 :]
    return f"{head!r}…{tail!r} ({len(text):,} characters)"


def qualified_name(obj: object) -> str:
    """``module.Qual.name`` of a class or function ("" when it has none)."""
    name = text_attr(obj, "__qualname__") or text_attr(obj, "__name__")
    if not name:
        return ""
    module = text_attr(obj, "__module__")
    return f"{module}.{name}" if module and module not in ("builtins", "__main__") else name


def describe(obj: object) -> str:
    """What an object is, the same in every process: kind and qualified name, or the value of a
    number, a string or ``None`` -- never a ``repr`` with an address."""
    try:
        return _describe(obj)
    except Exception:  # a metaclass may make even its name raise
        return "an object"


def _item(obj: object) -> str:
    """An item of a container: a string or number as written, anything else by kind only."""
    if is_str(obj) or type(obj) in _PLAIN:
        return _describe(obj)
    return "…"


def _container(obj: Any) -> str:
    """A short list, tuple or dict written out, its items described."""
    if type(obj) is dict:
        return shorten("{" + ", ".join(f"{_item(k)}: {_item(v)}" for k, v in obj.items()) + "}")
    inner = shorten(", ".join(_item(item) for item in obj))
    if type(obj) is tuple:
        return f"({inner},)" if len(obj) == 1 else f"({inner})"
    return f"[{inner}]"


def _describe(obj: object) -> str:
    if is_str(obj):
        return quoted(exact_str(obj))
    kind = type(obj)
    if kind in _PLAIN:
        try:
            return shorten(repr(obj))
        except ValueError:  # an int too long to print
            return f"a {kind.__name__} too large to print"
    if kind in (list, tuple, dict) and len(obj) <= 5:  # type: ignore[arg-type]
        return _container(obj)
    if kind in (set, frozenset):
        return f"a {kind.__name__} of {plural(len(obj), 'item')}"  # type: ignore[arg-type]
    fixture = fixture_name(obj)
    if fixture is not None:
        return f"fixture {fixture!r}"
    if is_class(obj):
        return f"class {qualified_name(obj) or '?'}"
    if is_method(obj):
        return f"method {qualified_name(attr(obj, '__func__')) or '?'}"
    if is_function(obj):
        name = qualified_name(obj)
        return "a lambda" if name.endswith("<lambda>") else f"function {name or '?'}"
    if kind is types.ModuleType:
        return f"module {text_attr(obj, '__name__') or '?'}"
    if kind in (types.BuiltinFunctionType, types.BuiltinMethodType):
        return f"built-in {text_attr(obj, '__name__') or 'function'}"
    name = kind.__qualname__
    if kind.__module__ not in ("builtins", "__main__"):
        name = f"{kind.__module__}.{name}"
    return f"{'an' if name[:1] in 'aeiouAEIOU' else 'a'} {name} object"
