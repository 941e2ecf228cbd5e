"""The job: what runs on the workers, with no knowledge of where it runs (no Dask here).

* :mod:`.scores`: a table of examples -> per-example scores (pinned schema) and statistics.
* :mod:`.digest`: the per-example digest of the texts scored (``text_digest``).
* :mod:`.plan`: a unit cut into slices by estimated cost.
* :mod:`.task`: a unit read once, cut, scored and written slice by slice (resume-aware).
* :mod:`.resume`: a finished slice read back (its statistics computed again from its parts).
* :mod:`.dedup`: duplicate ids across units, from the key hashes wave 1 returns.
* :mod:`.reuse`: rows of a previous run copied where their digest is unchanged (``--reuse``).
* :mod:`.longdocs`: an oversized example's rougeLsum in blocks of reference sentences.
* :mod:`.results`: what a task returns (:class:`TaskResult`, :class:`Brief`), results merged and
  finalised (:class:`Totals`); the exact bootstrap.

The names below are the job's interface for the executors (``pipeline.execution``); each loads
its module on first use, so that importing the package stays light (the run folder is :mod:`pipeline.runfolder`).
"""
from pipeline.lazy import lazy_getattr

_EXPORTS = {
    **dict.fromkeys(("HashCollisionError", "confirm_drops", "duplicate_units", "later_duplicates"), "dedup"),
    **dict.fromkeys(("finish_split", "prepare_split", "split_block"), "longdocs"),
    **dict.fromkeys(("BYTES_PER_TOKEN", "DEFAULT_TARGET_COST", "SOURCE_TOKEN_COST", "Slice", "estimate_costs",
                     "split_by_cost", "unit_from_dict", "unit_to_dict"), "plan"),
    **dict.fromkeys(("Brief", "TaskResult", "Totals", "exact_bootstrap", "finalize_results", "merge_results"),
                    "results"),
    "load_done": "resume",
    **dict.fromkeys(("Previous", "ReuseIndex", "build_index", "join_index", "lookup", "open_previous", "reader_fields", "take_rows"), "reuse"),
    **dict.fromkeys(("text_digest", "text_digests"), "digest"),
    **dict.fromkeys(("MAX_SPLIT_BLOCKS", "STATS", "TOO_LONG_STATUS", "ScoringSettings", "example_keys", "split_blocks_for", "key_hashes", "reason_cause", "row_digests",
                     "score_matrix", "score_table", "scorer_for", "scores_schema", "unit_stats"), "scores"),
    **dict.fromkeys(("TEST_TASK_SLEEP_ENV", "UnitContext", "UnitWork", "brief", "encode_outputs", "hashes_of",
                     "reload_unit", "score_slice", "score_unit", "split_input", "unit_input"), "task"),
}
__all__ = sorted(_EXPORTS)


__getattr__ = lazy_getattr("pipeline.job", _EXPORTS, globals())
