#!/usr/bin/env bash
# The cron wrapper of the nightly job: everything goes to a log file; it PRINTS only when a person is
# needed (a non-zero exit), so cron's MAILTO mails exactly those nights and a quiet night sends no mail.
#   jobs/cron/rouge-nightly.sh JOB_FILE [nightly flags, e.g. --scheduler tcp://HOST:8786]
# Environment (all optional):
#   ROUGE_NIGHTLY_ENV   file of KEY=VALUE lines sourced first (AWS_*, ROUGE_NIGHTLY_WEBHOOK; mode 0600)
#                       default /etc/rouge-pipeline/env
#   ROUGE_NIGHTLY_LOG   the log file (default /var/log/rouge-pipeline/nightly.log; its folder must exist)
#   ROUGE_NIGHTLY_LOCK  the lock file: a night still running makes the next one skip (default /tmp/rouge-nightly.lock)
#   ROUGE_PIPELINE      the command (default: rouge-pipeline on PATH, e.g. /opt/rouge-pipeline/venv/bin/rouge-pipeline)
# Exit status: nightly's own (docs/errors.md: 1 moved, 2 job error, 3 not comparable, 4 inconclusive,
# 10 scoring failed, 124 timed out), or 75 when the previous night still holds the lock.
set -uo pipefail
job="${1:?usage: rouge-nightly.sh JOB_FILE [nightly flags]}"
log="${ROUGE_NIGHTLY_LOG:-/var/log/rouge-pipeline/nightly.log}"
lock="${ROUGE_NIGHTLY_LOCK:-/tmp/rouge-nightly.lock}"
bin="${ROUGE_PIPELINE:-rouge-pipeline}"
envfile="${ROUGE_NIGHTLY_ENV:-/etc/rouge-pipeline/env}"
if [ -f "$envfile" ]; then
    set -a
    # shellcheck disable=SC1090
    . "$envfile"
    set +a
fi
if ! { : >>"$log"; } 2>/dev/null; then
    echo "rouge-nightly: cannot write the log $log (create its folder, owned by the cron user)"
    exit 2
fi
exec 9>>"$lock"
if ! flock -n 9; then
    echo "rouge-nightly: $job: the previous night still holds $lock; this night is skipped (exit 75)"
    exit 75
fi
out="$(mktemp)"
trap 'rm -f "$out"' EXIT
echo "=== $(date -u +%FT%TZ) rouge-pipeline nightly $*" >>"$log"
"$bin" nightly "$@" >"$out" 2>&1
status=$?
cat "$out" >>"$log"
echo "=== $(date -u +%FT%TZ) exit $status" >>"$log"
case "$status" in
    0) exit 0 ;;                                  # no change: nothing printed, no mail
    1) what="the outputs MOVED" ;;
    2) what="job-file error or the comparison failed" ;;
    3) what="NOT COMPARABLE with the earlier nights" ;;
    4) what="inconclusive: a move of min_effect could have gone unseen" ;;
    10) what="the SCORING FAILED" ;;
    124) what="TIMED OUT (timeout_minutes); the next night resumes the folder" ;;
    130) what="interrupted" ;;
    *) what="unexpected status" ;;
esac
echo "rouge-nightly: $job: $what (exit $status)"
grep -E '^(rouge-pipeline|::error::|::warning::|MOVED|NOT COMPARABLE|html:)' "$out" | tail -n 40
echo "full output: $log"
exit "$status"
