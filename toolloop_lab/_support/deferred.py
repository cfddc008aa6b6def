"""A class a package names at import but whose module (and its heavy base) loads on first use.

``from toolloop_lab import LLMAgent, LoopDebugger`` is every notebook's first cell. A lazy
attribute alone does not help there: ``from ... import LoopDebugger`` reads the name at
once, which would load the widget library (ipywidgets, anywidget) the class is built on.
:func:`deferred_class` makes a light stand-in instead: calling it builds the real class's
instance, ``isinstance`` and ``issubclass`` answer for the real class (without loading it
when nothing could be an instance yet), its attributes (``from_trace``, ...), docstring and
signature are the real class's, and a class statement that names it as a base subclasses
the real class. The real class stays where it is defined, importable under its own path.
"""

from __future__ import annotations

import importlib
import inspect
import sys
from typing import Any


class _Deferred(type):
    """The stand-ins' metaclass: each question about the class goes to the real one."""

    _target: tuple[str, str]

    def __new__(mcls, name: str, bases: tuple[type, ...], namespace: dict[str, Any]) -> Any:
        if "_target" in namespace:  # the stand-in itself, made by deferred_class
            return super().__new__(mcls, name, bases, namespace)
        real = tuple(b.real() if isinstance(b, _Deferred) else b for b in bases)
        namespace.pop("__qualname__", None)
        return type(real[0])(name, real, {**namespace, "__qualname__": name})

    def real(cls) -> type:
        """The real class (its module imported now, once)."""
        module, name = cls._target
        found: type = getattr(importlib.import_module(module), name)
        return found

    def _loaded(cls) -> type | None:
        module = sys.modules.get(cls._target[0])
        return None if module is None else getattr(module, cls._target[1], None)

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        return cls.real()(*args, **kwargs)

    def __instancecheck__(cls, instance: Any) -> bool:
        real = cls._loaded()  # nothing is an instance of a class not yet defined
        return real is not None and isinstance(instance, real)

    def __subclasscheck__(cls, subclass: type) -> bool:
        real = cls._loaded()
        return real is not None and issubclass(subclass, real)

    def __getattr__(cls, name: str) -> Any:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return getattr(cls.real(), name)

    def __dir__(cls) -> list[str]:
        return dir(cls.real())

    @property
    def __doc__(cls) -> str | None:  # type: ignore[override]
        return cls.real().__doc__

    @property
    def __signature__(cls) -> inspect.Signature:
        return inspect.signature(cls.real())


def deferred_class(module: str, name: str, *, home: str) -> Any:
    """A stand-in, named by the package ``home``, for the class ``name`` of ``module``
    that imports ``module`` only when the class is first used (see the module doc)."""
    return _Deferred(name, (), {"_target": (module, name), "__module__": home})
