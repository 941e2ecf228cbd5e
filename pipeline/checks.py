"""The value checks of every settings section (no third-party import); they raise ``ConfigError``
(:mod:`pipeline.errors`, importable from here)."""
from __future__ import annotations

from typing import Any

from pipeline.errors import ConfigError


def type_name(v: Any) -> str:
    return "null" if v is None else type(v).__name__


def check_bool(v, name):
    if not isinstance(v, bool):
        raise ConfigError(f"{name}: expected true or false, got {v!r} ({type_name(v)})")
    return v


def check_int(v, name, minimum=0, allow_none=False):
    if v is None and allow_none:
        return v
    if isinstance(v, bool) or not isinstance(v, int):
        raise ConfigError(f"{name}: expected an integer, got {v!r} ({type_name(v)})")
    if v < minimum:
        raise ConfigError(f"{name}: must be >= {minimum}, got {v}")
    return v


def check_choice(v, name, choices):
    if v not in choices:
        raise ConfigError(f"{name}: expected one of {', '.join(map(str, choices))}, got {v!r}")
    return v


def check_str(v, name, allow_none=False):
    if v is None and allow_none:
        return v
    if not isinstance(v, str) or not v:
        raise ConfigError(f"{name}: expected a non-empty string, got {v!r} ({type_name(v)})")
    return v
