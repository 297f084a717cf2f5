#!/usr/bin/env bash
# Submits an sfz job array and the merge that depends on it; prints the two job ids.
#   scripts/slurm/submit.sh fuzz  N OUT SFZ-FUZZ-ARGUMENTS...    # campaign.sbatch + merge.sbatch
#   scripts/slurm/submit.sh infer N OUT SFZ-INFER-ARGUMENTS...   # infer.sbatch + infer-merge.sbatch
# Extra options for sbatch (a partition, an account, a time limit) go in $SBATCH_ARGS; the sfz
# binary used is $SFZ (default: `sfz` on PATH; give an absolute path on a cluster).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
what="${1:?usage: submit.sh fuzz|infer N OUT ARGUMENTS...}"
n="${2:?usage: submit.sh fuzz|infer N OUT ARGUMENTS...}"
out="${3:?usage: submit.sh fuzz|infer N OUT ARGUMENTS...}"
shift 3
case "$what" in
fuzz) array=campaign.sbatch merge=merge.sbatch ;;
infer) array=infer.sbatch merge=infer-merge.sbatch ;;
*) echo "submit.sh: the first argument is fuzz or infer" >&2; exit 2 ;;
esac
mkdir -p "$out"
out="$(cd "$out" && pwd)"
# shellcheck disable=SC2086 # SBATCH_ARGS is a list of options
jobs=$(sbatch --parsable ${SBATCH_ARGS:-} --array="1-$n" --chdir="$PWD" --output="$out/%x-%A_%a.log" "$here/$array" "$out" "$@")
# shellcheck disable=SC2086
merge=$(sbatch --parsable ${SBATCH_ARGS:-} --dependency="afterany:$jobs" --chdir="$PWD" --output="$out/%x-%j.log" "$here/$merge" "$out")
echo "$jobs $merge"
