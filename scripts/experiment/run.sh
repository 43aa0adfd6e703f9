#!/usr/bin/env bash
# Runs the experiment's arms through `toolrl train` and writes the plots and
# the results page into docs/experiment/. Called by `make experiment`,
# `make experiment-ablations`, `make experiment-easymix` and `make
# experiment-quantized`; every run starts from its config's committed model
# (models/calc-overcall for the main, ablation and easy-mix arms, models/calc
# for the quantized ones), with its config's prompt stream and evaluation
# (the same for the arms of one page; the page names the first arm's).
#
#   scripts/experiment/run.sh OUT DOC SEEDS ARM...
set -euo pipefail
out=$1 doc=$2 seeds=$3
shift 3
arms=("$@")
bin=bin/toolrl
mkdir -p "$out" "$doc"
start=$(date +%s)
commit="$(git rev-parse --short HEAD)$(git diff --quiet || echo ' (with uncommitted changes)')"
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
runs=()
for seed in $seeds; do
  for arm in "${arms[@]}"; do
    dir="$out/$arm-s$seed"
    rm -rf "$dir"
    echo "experiment: arm $arm, seed $seed -> $dir"
    t0=$(date +%s)
    "$bin" train --config "experiments/$arm.yaml" --seed "$seed" --out "$dir"
    echo "experiment: arm $arm, seed $seed took $(( $(date +%s) - t0 )) s"
    runs+=("$dir")
  done
done
elapsed=$(( $(date +%s) - start ))
load_after=$(cut -d' ' -f1-3 /proc/loadavg)
name=$(basename "$doc")
# The evaluation the page describes: the first arm's config's eval: block
# (its prompts relative to experiments/), and the prompt count its runs
# evaluated.
eval_key() { awk -v k="$1:" '/^eval:/ { e = 1; next } /^[^ #]/ { e = 0 } e && $1 == k { print $2 }' "experiments/${arms[0]}.yaml"; }
eval_prompts=$(eval_key prompts | sed 's#^\.\./##')
eval_g=$(eval_key group_size)
eval_seed=$(eval_key seed)
eval_n=$(jq -s '.[0].prompts' "${runs[0]}/eval.jsonl")
# run_rows JQ FORMAT: one table row per run, three figures that jq reduces
# from the run's metrics.jsonl, printed with FORMAT (run name first).
run_rows() {
  for r in "${runs[@]}"; do
    jq -rs "$1" "$r/metrics.jsonl" | awk -v run="$(basename "$r")" -v format="$2" -F'\t' '{ printf format, run, $1, $2, $3 }'
  done
}
"$bin" plot "${runs[@]}" --to "$doc" --table "$doc/table.md" --width 800 --height 480
{
  echo "# Results: ${arms[*]}"
  echo
  echo "Written by \`scripts/experiment/run.sh $out $doc \"$seeds\" ${arms[*]}\` at commit"
  echo "$commit (the commit when it started) on $(date -u +%Y-%m-%dT%H:%MZ),"
  echo "$(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')), load average $load_before before and $load_after after:"
  echo "$elapsed s for ${#runs[@]} runs. Configs: $(printf 'experiments/%s.yaml ' "${arms[@]}")."
  echo
  echo "Held-out evaluation ($eval_prompts, $eval_n prompts × G = $eval_g, eval.seed $eval_seed) of the starting policy"
  echo "(v0) and of each run's last version; 95% intervals over the $eval_n prompts (cluster-robust, CR1: the"
  echo "$eval_g samples of a prompt are not independent; the table's last column names the interval each row used)."
  echo
  cat "$doc/table.md"
  echo
  echo "Credit inversions over each run's iterations (metrics.jsonl's advantage figures, from the advantage"
  echo "records the learner trained on): the groups holding right and wrong answers, the right trajectories"
  echo "whose advantage at the first trained token (the decision taken from the prompt) is negative, and the"
  echo "(right, wrong) pairs where the right one's is not above the wrong one's:"
  echo
  echo "| run | groups with right and wrong | right with A < 0 | right not above wrong |"
  echo "|---|---:|---:|---:|"
  run_rows '[([.[].advantage.mixed_groups // 0] | add), ([.[].advantage.right_negative // 0] | add), ([.[].advantage.right_not_above_wrong // 0] | add)] | @tsv' \
    '| %s | %d | %d | %d |\n'
  echo
  echo "Rollout mismatch (metrics.jsonl's learner.rollout_mismatch: the records' behaviour logprobs against the"
  echo "learner's before each update: mean |Δ| below 1e-6 with float32 rollouts, the quantization gap with int8 ones), over each run's iterations:"
  echo
  echo "| run | mean of mean \\|Δ\\| | largest max \\|Δ\\| | mean k3 |"
  echo "|---|---:|---:|---:|"
  run_rows '[.[].learner.rollout_mismatch] | [([.[].mean_abs] | add / length), ([.[].max_abs] | max), ([.[].k3] | add / length)] | @tsv' \
    '| %s | %.2g | %.2g | %.2g |\n'
  echo
  for f in "$doc"/*.png; do
    b=$(basename "$f")
    echo "![${b%.png}]($b)"
  done
} > "$doc/README.md"
echo "experiment: $elapsed s; results in $doc/README.md"
