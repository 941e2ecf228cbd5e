"""A spy on the default encoder's scans: how many texts each scan reads (a text not scanned again
is one the shared-reference paths or the reference cache served)."""
from __future__ import annotations

from pipeline.text.encoder import DefaultEncoder


def scanned_texts(monkeypatch, fresh_encoders: bool = False) -> list[int]:
    """The number of texts each later scan reads, appended as it happens; ``fresh_encoders``: the
    process's default encoders are replaced by new ones (no reference kept from an earlier test)."""
    if fresh_encoders:
        from pipeline.scoring import engine

        monkeypatch.setattr(engine, "_ENCODERS", {})
    seen: list[int] = []
    original = DefaultEncoder._encode_units

    def spy(self, buf, offs, *scan):
        seen.append(len(offs) - 1)
        return original(self, buf, offs, *scan)

    monkeypatch.setattr(DefaultEncoder, "_encode_units", spy)
    return seen
