"""Names a package hands on from modules it imports only on first use (PEP 562).

``toolloop_lab`` and ``toolloop_lab._widget`` keep their heavy parts (the widget library,
pandas, matplotlib, the recording models) unloaded until one of their names is read: each
says in one table which module holds which name, and :func:`lazy_getattr` makes the
package's ``__getattr__`` from it.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, MutableMapping
from typing import Any


def lazy_getattr(
    package: str, table: Mapping[str, str], namespace: MutableMapping[str, Any]
) -> Callable[[str], Any]:
    """The ``__getattr__`` of ``package``: a name of ``table`` is imported from its module
    on first use and kept in ``namespace`` (the package's ``globals()``), so it is loaded
    once; any other name is an ``AttributeError``."""

    def __getattr__(name: str) -> Any:
        module = table.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value
        return value

    return __getattr__
