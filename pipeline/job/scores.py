"""Scores and statistics of a table of examples: the per-example score table (pinned schema),
the scorer of a run's settings, the statistics of a task's scores, example keys and their hashes,
quarantine reasons."""
from __future__ import annotations

import re
from functools import lru_cache

import numpy as np
import pyarrow as pa

from pipeline.scoring import diagnostics as diag
from pipeline import profiles
from pipeline.io.input_spec import QUARANTINE_SCHEMA
from pipeline.scoring import split
from pipeline.scoring.batch import MAX_BACKTRACK_WORDS, STATUS_OK
from pipeline.scoring.engine import RougeEngine
from pipeline.settings import ScoringSettings  # noqa: F401 - job.ScoringSettings, the tasks' settings
from pipeline.scoring.types import STATS
from pipeline.job.digest import text_digests
from pipeline.job.plan import estimate_costs
from pipeline.stats import StatsAccumulator
from pipeline.stats.keys import example_key_hashes, example_keys


# what a run keeps of the texts with output.keep_texts (the canonical table's columns)
TEXT_FIELDS = [pa.field("candidate", pa.string()), pa.field("references", pa.list_(pa.string()))]


def scores_schema(rouge_types, diagnostics: bool = True, keep_texts: bool = False) -> pa.Schema:
    """The per-example scores' columns: keys, counts, ``text_digest`` (:mod:`pipeline.job.digest`),
    ``line_digest`` (:mod:`pipeline.io.linedigest`) and ``cost`` (:func:`estimate_costs`), the
    scores, the status, the diagnostics, and with ``keep_texts`` the texts scored."""
    fields = [
        pa.field("id", pa.string(), nullable=False),
        pa.field("system", pa.string(), nullable=False),
        pa.field("n_refs", pa.int32(), nullable=False),
        pa.field("cand_tokens", pa.int64(), nullable=False),
        pa.field("ref_tokens", pa.int64(), nullable=False),
        pa.field("text_digest", pa.uint64(), nullable=False),
        # the input line's BLAKE2b-64 (null when not read from one clean JSONL line) and the planner's
        # cost estimate: a --reuse run copies the row of an unchanged line without parsing it
        pa.field("line_digest", pa.uint64(), nullable=True),
        pa.field("cost", pa.int64(), nullable=False),
    ]
    for t in rouge_types:
        fields += [pa.field(f"{t}_{s}", pa.float64(), nullable=False) for s in STATS]
    fields.append(pa.field("status", pa.string(), nullable=False))
    if diagnostics:
        fields += diag.DIAG_FIELDS
    if keep_texts:
        fields += TEXT_FIELDS
    return pa.schema(fields)


@lru_cache(maxsize=8)
def scorer_for(settings: ScoringSettings):
    """The scorer the run's profile builds (cached per process)."""
    return profiles.get(settings.profile).build_scorer(settings)


MAX_SPLIT_BLOCKS = 64


def row_digests(table: pa.Table, settings: ScoringSettings, signature: str) -> np.ndarray:
    """Every row's ``text_digest`` (:mod:`pipeline.job.digest`): its texts, the source when the
    diagnostics read it, and the run's ``signature``."""
    source = table.column("source") if settings.diagnostics and "source" in table.column_names else None
    return text_digests(table.column("candidate"), table.column("references"), source, signature=signature,
                        with_source=settings.diagnostics)


def line_columns(table: pa.Table, settings: ScoringSettings) -> dict:
    """``line_digest`` and ``cost`` of canonical rows (the digest: null where the reader did not
    read the row from one line)."""
    digest = (table.column("line_digest") if "line_digest" in table.column_names
              else pa.nulls(table.num_rows, pa.uint64()))
    return {"line_digest": digest,
            "cost": pa.array(estimate_costs(table, source=settings.diagnostics), pa.int64())}


def split_blocks_for(piece, settings: ScoringSettings, target_cost: float) -> int:
    """How many blocks of reference sentences an oversized slice's rougeLsum is cut into (1: no
    split; ``piece``: a :class:`pipeline.job.plan.Slice`)."""
    # only rouge-score's own types on default or unicode tokens with max-F have the block kernels:
    # the engine's, which the rouge-score and unicode profiles build
    if (not piece.oversized or "rougeLsum" not in settings.rouge_types
            or type(scorer_for(settings)) is not RougeEngine):
        return 1
    return int(min(MAX_SPLIT_BLOCKS, max(1, -(-piece.cost // max(int(target_cost), 1)))))


TOO_LONG_STATUS = "too_long"
_STATUS_LABELS = pa.array(["ok", "empty_candidate", "empty_reference", TOO_LONG_STATUS], pa.string())


def score_table(table: pa.Table, settings: ScoringSettings, quarantine: bool = False, fmt: str = "jsonl",
                split_positions=None, keep_texts: bool = False, signature: str = ""):
    """Canonical example table in, per-example scores (pinned schema) out.

    An example the scorer cannot score (``BatchScores.status == STATUS_TOO_LONG``: a
    rougeLsum sentence pair too long to backtrack) gets status ``too_long`` and NaN scores;
    with ``quarantine=True`` such examples are left out of the scores instead and returned
    as quarantine rows (``(scores, quarantine)``; ``table`` must then carry the canonical
    ``file`` and ``row`` columns, ``fmt`` says whether ``row`` is a line or a Parquet row).
    ``split_positions``: for a one-row table, rougeLsum's union positions computed in
    blocks (:func:`split_block`), merged here instead of scoring rougeLsum again.
    ``keep_texts``: the candidate and references columns kept next to the scores.
    ``signature``: the run's, in every row's ``text_digest`` (:func:`row_digests`).
    """
    schema = scores_schema(settings.rouge_types, settings.diagnostics, keep_texts)
    empty_q = QUARANTINE_SCHEMA.empty_table()
    if table.num_rows == 0:
        return (schema.empty_table(), empty_q) if quarantine else schema.empty_table()
    scorer = scorer_for(settings)
    if split_positions is None:
        score_arrow = getattr(scorer, "score_arrow", None)
        if score_arrow is not None:
            res = score_arrow(table.column("references"), table.column("candidate"))
        else:
            res = scorer.score_arrays(table.column("references").to_pylist(), table.column("candidate").to_pylist())
    else:
        res = split.merge_blocks(scorer, table.column("candidate")[0].as_py(),
                                 table.column("references")[0].as_py(), split_positions)
    too_long = res.status != STATUS_OK
    # codes into _STATUS_LABELS, taken in Arrow (a str per row through Python was ~2 us/pair)
    status_code = np.where(too_long, 3, np.where(res.cand_len == 0, 1, np.where(res.ref_len == 0, 2, 0)))
    cols = {
        "id": table.column("id"),
        "system": table.column("system"),
        "n_refs": pa.array(res.n_refs, pa.int32()),
        "cand_tokens": pa.array(res.cand_len, pa.int64()),
        "ref_tokens": pa.array(res.ref_len, pa.int64()),
        "text_digest": pa.array(row_digests(table, settings, signature), pa.uint64()),
        **line_columns(table, settings),
    }
    for t, name in enumerate(settings.rouge_types):
        for k, stat in enumerate(STATS):
            cols[f"{name}_{stat}"] = pa.array(res.scores[:, t, k], pa.float64())
    cols["status"] = _STATUS_LABELS.take(pa.array(status_code, pa.int8()))
    if settings.diagnostics:
        cols.update(diag.for_table(table, res, settings, scorer_for))
    if keep_texts:
        cols.update({f.name: table.column(f.name) for f in TEXT_FIELDS})
    scores = pa.table(cols, schema=schema)
    if not quarantine:
        return scores
    if not too_long.any():
        return scores, empty_q
    bad = np.flatnonzero(too_long)
    ids, systems = table.column("id").to_pylist(), table.column("system").to_pylist()
    files, rows = table.column("file").to_pylist(), table.column("row").to_pylist()
    q = {n: [] for n in QUARANTINE_SCHEMA.names}
    for i in bad.tolist():
        where = f"{files[i]} row {rows[i]}" if fmt == "parquet" else f"{files[i]} line {rows[i] + 1}"
        if res.status[i] == 2:  # the family scorer: ROUGE-W of a reference without tokens
            reason = (f"{where}: ROUGE-W is undefined for a reference without tokens (ROUGE-1.5.5 stops "
                      "there); drop that reference or leave out rougeW")
        else:
            reason = (f"{where}: rougeLsum sentence pair too long to backtrack (candidate {int(res.cand_len[i])} "
                      f"tokens, references {int(res.ref_len[i])} tokens, more than {MAX_BACKTRACK_WORDS} words of "
                      "memory); split the text into sentences (newlines) or leave out rougeLsum")
        for k, v in zip(QUARANTINE_SCHEMA.names, (ids[i], systems[i], files[i], rows[i], reason)):
            q[k].append(v)
    keep = pa.array(~too_long)
    return scores.filter(keep), pa.table(q, schema=QUARANTINE_SCHEMA)


def score_matrix(scores: pa.Table, rouge_types) -> np.ndarray:
    n = scores.num_rows
    mat = np.empty((n, len(rouge_types), 3), dtype=np.float64)
    for t, name in enumerate(rouge_types):
        for k, stat in enumerate(STATS):
            mat[:, t, k] = scores.column(f"{name}_{stat}").to_numpy()
    return mat


def unit_stats(scores: pa.Table, ctx, hashes: np.ndarray | None = None) -> StatsAccumulator:
    """The statistics of a task's scores; ``hashes``: :func:`key_hashes` of exactly its rows,
    when the task has them (wave 1 hashes its unit's keys for the duplicate search)."""
    types = list(ctx.scoring.rouge_types)
    systems = scores.column("system").combine_chunks()
    # keys as one Arrow column: hashed from its buffer (no str per example)
    keys = example_keys(systems, scores.column("id"))
    return StatsAccumulator.from_scores(keys, systems, score_matrix(scores, types), types,
                                        seed=ctx.seed, n_boot=ctx.n_boot, key_hashes=hashes)


def key_hashes(keys: pa.Table) -> np.ndarray | None:
    """A uint64 per ``(system, id)`` of a :func:`readers.unit_keys` table: the statistics' hash
    of its example key (:func:`example_keys`, BLAKE2b-64), so a wave-1 task hashes each key once
    for both.  Equal keys give equal hashes, so where no two hashes are equal no two keys are
    (the duplicate search across units: :mod:`pipeline.job.dedup`)."""
    if keys.num_rows == 0:
        return np.zeros(0, dtype=np.uint64)
    if keys.column("system").null_count or keys.column("id").null_count:
        return None  # not a canonical table's keys (its readers let no null through): callers refuse it
    return example_key_hashes(example_keys(keys.column("system"), keys.column("id")))

_LOCATION = re.compile(r" (?:line|row) \d+: ")
_QUOTED_AFTER = re.compile(r" (id|system) (?:'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\")")


def reason_cause(reason: str) -> str:
    """The cause of a quarantine reason ``"<file URL> line N: <cause>"``, without the location
    (the last one, for references-side reasons), ids, systems and byte offsets."""
    last = None
    for m in _LOCATION.finditer(reason):
        last = m
    cause = reason[last.end():] if last else reason
    cause = _QUOTED_AFTER.sub(r" \1", cause)
    cause = re.sub(r" \(first at .*\)$", "", cause)
    cause = re.sub(r"\bat byte \d+", "at byte N", cause)
    return cause.strip() or "unknown"


def _reason_counts(quarantine: pa.Table) -> dict:
    if not quarantine.num_rows:
        return {}
    out: dict[str, int] = {}
    for r in quarantine.column("reason").to_pylist():
        key = reason_cause(r)
        out[key] = out.get(key, 0) + 1
    return dict(sorted(out.items()))

