"""A finished slice read back for a resumed run: its marker and parts (:func:`pipeline.runfolder.read_done_slice`)
and the statistics and key hashes the job computes again from them."""
from __future__ import annotations

import numpy as np
import pyarrow as pa

from pipeline.job.scores import STATS, key_hashes, scores_schema, unit_stats
from pipeline.runfolder import read_done_slice


def load_done(unit_index: int, slice_index: int, ctx) -> dict | None:
    """The result of a finished slice, or ``None`` if its marker or a file it wrote is missing
    or unreadable.  Its statistics are computed again from its part files: they hold the id,
    system and every score the statistics are made of, as float64, so the result equals the
    one the slice returned (integer sums, exact extrema and counts; a test checks it).
    ``"hashes"``: the key hashes of its scored rows (the cross-unit duplicate search's input)."""
    types = ctx.scoring.rouge_types
    columns = ["id", "system", *(f"{t}_{s}" for t in types for s in STATS)]
    done = read_done_slice(unit_index, slice_index, ctx, pa.schema([scores_schema(types).field(c) for c in columns]))
    if done is None:
        return None
    result, scores = done
    held = result.pop("held", None) or []
    hashes = key_hashes(scores.select(["system", "id"]))
    result["stats"] = unit_stats(scores, ctx, hashes)
    result["hashes"] = np.concatenate([hashes, np.array(held, dtype=np.uint64)]) if held else hashes
    return result
