# Stage timing for .ci/run (sourced): `stage NAME` ends the stage running (printing its wall time)
# and starts NAME; when the script exits, however it exits, the last stage's time, then every
# stage's and the total are printed to standard error. The script's exit status is left as it was
# (an EXIT trap that does not call `exit` keeps it), so `set -euo pipefail` still decides it.
_stage_name=""
_stage_start=$SECONDS
_stage_times=""
_stages_start=$SECONDS

_stage_end() {
    [ -n "$_stage_name" ] || return 0
    local took=$((SECONDS - _stage_start))
    printf '== stage %s: %d s\n' "$_stage_name" "$took" >&2
    _stage_times+="$(printf '  %6d s  %s' "$took" "$_stage_name")"$'\n'
    _stage_name=""
}

stage() {
    # quiet under `set -x`: the trace shows `stage NAME`, not this function's lines
    { local flags=$-; set +x; } 2> /dev/null
    _stage_end
    _stage_name=$1
    _stage_start=$SECONDS
    printf '== stage %s\n' "$_stage_name" >&2
    case $flags in *x*) set -x ;; esac
}

_stages_report() {
    { local status=$? where=""; set +x; } 2> /dev/null
    [ "$status" = 0 ] || [ -z "$_stage_name" ] || where=" (in stage $_stage_name)"
    _stage_end
    printf '== stage times (wall):\n%s  %6d s  in all, exit %d%s\n' "$_stage_times" \
        "$((SECONDS - _stages_start))" "$status" "$where" >&2
}
trap _stages_report EXIT
