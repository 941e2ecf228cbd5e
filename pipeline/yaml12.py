"""YAML with the YAML 1.2 core schema's plain scalars: what a config, a ``--set`` value and a
nightly job file are read with.

PyYAML resolves plain scalars by YAML 1.1, where ``no``, ``off`` and ``y`` are booleans (so
``scoring.language: no``, Norwegian, became ``False``), ``010`` is octal, ``1:30`` a sexagesimal
number and ``2026-08-15`` a date.  This loader is PyYAML's ``SafeLoader`` (same parser, same
errors, no new dependency) with only the core schema's resolvers: null (``~``, ``null``, empty),
bool (``true``/``false``), int (decimal, ``0o``, ``0x``), float (``1.5``, ``1e3``, ``.inf``,
``.nan``); every other plain scalar is a string.  Merge keys (``<<``) still work.
"""
from __future__ import annotations

import math
import re

import yaml

_NULL = re.compile(r"^(?:~|null|Null|NULL|)$")
_BOOL = re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$")
_INT = re.compile(r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$")
_FLOAT = re.compile(r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
                    r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$")


class Loader(yaml.SafeLoader):
    """``SafeLoader`` resolving plain scalars by the YAML 1.2 core schema."""

    yaml_implicit_resolvers: dict = {}


def _int(loader, node) -> int:
    v = loader.construct_scalar(node)
    if v.startswith(("0o", "0x")):
        return int(v[2:], 8 if v[1] == "o" else 16)
    return int(v, 10)   # "010" is ten, not eight


def _float(loader, node) -> float:
    v = loader.construct_scalar(node)
    low = v.lower()
    if low.endswith(".inf"):
        return -math.inf if low.startswith("-") else math.inf
    if low == ".nan":
        return math.nan
    return float(v)


Loader.add_constructor("tag:yaml.org,2002:int", _int)
Loader.add_constructor("tag:yaml.org,2002:float", _float)
for _tag, _pattern, _first in (
        ("null", _NULL, ["~", "n", "N", ""]), ("bool", _BOOL, list("tTfF")),
        ("int", _INT, list("-+0123456789")), ("float", _FLOAT, list("-+.0123456789"))):
    Loader.add_implicit_resolver(f"tag:yaml.org,2002:{_tag}", _pattern, _first)
Loader.add_implicit_resolver("tag:yaml.org,2002:merge", re.compile(r"^(?:<<)$"), ["<"])


def load(stream):
    """One YAML document (a string or a text stream), plain scalars by the YAML 1.2 core schema."""
    return yaml.load(stream, Loader=Loader)  # noqa: S506 - a SafeLoader subclass
