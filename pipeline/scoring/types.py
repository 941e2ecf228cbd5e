"""ROUGE type names, validated the way rouge-score validates them."""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable

_NGRAM = re.compile(r"rouge[0-9]$")


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
    if isinstance(name, str) and _NGRAM.match(name):
        n = int(name[5:])
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
