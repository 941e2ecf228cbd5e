"""The run folder: the only code that knows its names and files (:mod:`.names`), what a run
writes there, reads back and checks while it runs (:mod:`.folder`), the one reader of a run for
every consumer (:mod:`.read`), its lease (:mod:`.lease`) and the inputs it records
(:mod:`.inputs`).  fsspec and Arrow only; never Dask."""
from pipeline.runfolder.folder import (  # noqa: F401
    EXACT_SCHEMA, OldLayoutError, RunFolderError, RunStopped, TEST_PAUSE_ENV, check_layout, check_stop, done_slices, exact_rows_to_arrow,
    folder_files, foreign_files, load_marker, mark_success, pause_point,
    precheck_run_folder, prepare_run_folder, read_done_slice, read_plan, read_run_info, remove_run_files, remove_slices,
    remove_temp_files, utc_now, verify_parts, write_exact, write_plan, write_profile_outputs, write_stats, write_summary, write_task_files,
)
from pipeline.runfolder.inputs import (  # noqa: F401
    changed_inputs, check_output_vs_inputs, fingerprint, glob_prefix, input_urls, list_inputs, normalise, plan_id,
)
from pipeline.runfolder.lease import (  # noqa: F401
    LEASE_HEARTBEAT_S, LEASE_TIMEOUT_S, Lease, RunFolderBusyError, holder_text, lease_is_stale,
)
from pipeline.runfolder.names import (  # noqa: F401
    LAYOUT, LEASE, MARKER_FORMAT, META_CONFIG_HASH, META_SIGNATURE, PLAN_FORMAT, ROUGE155_CORPUS, RUN_FORMAT, SAMPLE_FILES,
    SUCCESS, describe, is_run_file, marker_url, part_name, part_order, partition_path, url,
)
from pipeline.runfolder.whole import PART_HASHES_KEY, PARTS_KEY  # noqa: F401
from pipeline.runfolder.read import (  # noqa: F401
    OpenedRun, has_success, is_complete, not_finished, open_run, read_all_scores, read_exact, read_part, read_scores,
    read_stats, read_summary, score_files, score_part_urls,
)
