"""Pausing the cyclic garbage collector around work that makes many objects which live on."""

from __future__ import annotations

import functools
import gc
from collections.abc import Callable
from typing import Any, TypeVar, cast

_F = TypeVar("_F", bound=Callable[..., Any])


def without_cyclic_gc(function: _F) -> _F:
    """``function`` with the cyclic garbage collector paused while it runs (and restored as
    it was).

    Objects made meanwhile and kept would otherwise be walked by the collections they trigger,
    and the garbage among them (lists made to become tuples) would be counted among the objects
    that live long, which brings the next full collection closer.
    """

    @functools.wraps(function)
    def paused(*args: Any, **kwargs: Any) -> Any:
        enabled = gc.isenabled()
        gc.disable()
        try:
            return function(*args, **kwargs)
        finally:
            if enabled:
                gc.enable()

    return cast(_F, paused)
