#!/usr/bin/env bash
# Nightly regression gate (issue #7): compare tonight's run with the previous one and fail
# loudly when the outputs moved out of the band.
#   jobs/compare_previous.sh PREVIOUS_RUN NEW_RUN [REPORT_HTML] [extra compare flags, e.g. --band 0.005]
# Exit status: 0 inside the band, 1 moved (read the movers listed), 2 error.
# With no previous run yet (first night) it only writes the run report.
set -uo pipefail
prev="${1:?previous run folder}"; new="${2:?new run folder}"; html="${3:-${new%/}-compare.html}"
shift $(( $# < 3 ? $# : 3 ))
if [ ! -e "${prev%/}/_SUCCESS" ]; then
    echo "compare: no finished previous run at $prev; nothing to compare (first run?)" >&2
    exec rouge-pipeline report "$new" -o "$html"
fi
rouge-pipeline compare "$prev" "$new" --html "$html" "$@"
status=$?
if [ "$status" -eq 1 ]; then
    echo "::error::ROUGE MOVED between $prev and $new: read the examples listed above and $html" >&2
elif [ "$status" -ne 0 ]; then
    echo "::error::rouge-pipeline compare failed (status $status)" >&2
fi
exit "$status"
