"""ROUGE type names, validated the way rouge-score validates them, and the names every layer
shares: :data:`STATS`, :data:`DEFAULT_TYPES` and :data:`TYPE_NAME` (the one pattern of a type
name, rouge-score's and the ROUGE family's).  No NumPy: the CLI and settings validation read it."""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable

# the three numbers of every type, in the order of a Score and of the score columns
STATS = ("precision", "recall", "fmeasure")
# rouge_types when not given (rouge-score's, evaluate's and a run configuration's default)
DEFAULT_TYPES = ("rouge1", "rouge2", "rougeL", "rougeLsum")
# Every type name: rouge-score's (rouge0..9 — rouge0 refused with its own message — L, Lsum)
# and the ROUGE family's (W-<weight>, S<gap>, SU<gap>, S*, SU*).
TYPE_NAME = re.compile(r"rouge(?:(?P<n>[0-9])|(?P<lsum>Lsum)|(?P<l>L)|W-(?P<w>[0-9]*\.?[0-9]+)"
                       r"|(?P<s>SU|S)(?P<gap>\*|[0-9]+))$")


def match_type_name(name) -> re.Match | None:
    """:data:`TYPE_NAME` matched against ``name`` (None for a non-str)."""
    return TYPE_NAME.match(name) if isinstance(name, str) else None


def is_family_name(name) -> bool:
    """True for a ROUGE-W or ROUGE-S/SU name (the ROUGE family's, not rouge-score's), by its form
    only (``rougeW-0`` too: the family scorer refuses it with its own message)."""
    m = match_type_name(name)
    return m is not None and (m["w"] is not None or m["s"] is not None)


@dataclass(frozen=True)
class RougeType:
    name: str
    kind: str  # "n", "L" (sentence level) or "Lsum" (summary level)
    n: int = 0


def parse_rouge_type(name: str | RougeType) -> RougeType:
    if isinstance(name, RougeType):
        return name
    if name == "rougeL":
        return RougeType(name, "L")
    if name == "rougeLsum":
        return RougeType(name, "Lsum")
    m = match_type_name(name)
    if m is not None and m["n"] is not None:
        n = int(m["n"])
        if n <= 0:
            raise ValueError(f"rougen requires positive n: {name}")
        return RougeType(name, "n", n)
    raise ValueError(f"Invalid rouge type: {name}")


def parse_rouge_types(names: Iterable[str | RougeType], allow_empty: bool = False) -> list[RougeType]:
    # Like rouge-score, a bare string is iterated (so "rouge1" fails on "r"), and
    # the drop-in API accepts an empty list (scores are then ``{}``).
    out = [parse_rouge_type(n) for n in names]
    if not out and not allow_empty:
        raise ValueError("at least one rouge type is needed")
    return out
