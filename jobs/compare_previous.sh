#!/usr/bin/env bash
# Nightly regression gate for a run made outside `rouge-pipeline nightly`: compare NEW_RUN with the
# finished earlier sibling folders (dated nightly folders; any fsspec URL: /path, file://, s3://, gs://).
#   jobs/compare_previous.sh NEW_RUN [REPORT_HTML] [extra compare flags, e.g. --band 0.005]
# Exit status: 0 no change (or no earlier run yet), 1 moved, 2 error, 3 not comparable,
# 4 inconclusive (a move of --min-effect could have gone unseen).
set -uo pipefail
new="${1:?new run folder}"; html="${2:-${new%/}/compare.html}"
shift $(( $# < 2 ? $# : 2 ))
rouge-pipeline compare "$new" --previous --html "$html" "$@"
status=$?
case "$status" in
    0) ;;
    1) echo "::error::ROUGE MOVED in $new: read the examples listed above and $html" >&2 ;;
    3) echo "::error::$new is not comparable with the earlier runs: see the reason above and $html" >&2 ;;
    4) echo "::warning::$new: inconclusive: nothing moved, but a move of --min-effect could have gone unseen ($html)" >&2 ;;
    *) echo "::error::rouge-pipeline compare failed (status $status)" >&2 ;;
esac
exit "$status"
