"""Names a package exports but imports on first use (PEP 562), so that importing it stays light."""
from __future__ import annotations

import importlib


def lazy_getattr(package: str, names: dict[str, str], namespace: dict, prefix: str | None = None):
    """A module ``__getattr__`` for ``package``: ``names[name]`` is the module holding ``name``
    (``prefix`` + it; default: a submodule of ``package``), imported when ``name`` is first asked
    for and then kept in ``namespace`` (the package's ``globals()``)."""
    prefix = f"{package}." if prefix is None else prefix

    def __getattr__(name: str):
        module = names.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(prefix + module), name)
        namespace[name] = value
        return value

    return __getattr__
