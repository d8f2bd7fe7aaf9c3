#!/usr/bin/env bash
# Hot/cold placement against all-cpu and layer placement at the same byte
# budget (issue 16's placement target; bench/README.md, "Hot/cold placement
# on a simulated fast device"). One command:
#
#   bench/sparse_placement.sh [BUILD_DIR]      (default build/release)
#
# Makes (once) a synthetic ReLU llama with predictors, F32 (the sim device
# computes F32 only): dim 512, 8 layers, ffn 4096, ~90% of the neurons
# inactive per token. sim0 is an asynchronous simulated device whose nodes
# take at least their bytes / SIM_GBPS (LOOM_SIM_GBPS_0; the reference
# kernels' own time counts towards it). Then, REPS rounds, each running
# every configuration once (interleaved, so drift hits all alike), decode
# t/s of N tokens after a 5-token prompt, median per configuration:
#   dense      --device cpu --sparse off
#   all-cpu    --device cpu (sparse)
#   layer      --device cpu,sim0 -ngl 0 -ot 'blk\.0\.ffn_.*=sim0': layer 0's
#              whole FFN (gate, up, down, down_t, predictor) on sim0, as
#              many whole layers' FFNs as the budget holds (one)
#   layer-ngl  --device cpu,sim0 -ngl 1: all of layer 0 (its 39.0 MB of
#              weights and its KV cache) on sim0; ops sim0 lacks (ROPE,
#              SET_ROWS, ATTENTION) run on the cpu
#   hot/cold   --device cpu,sim0 --sparse-budget BUDGET: the rows of the
#              20% most frequent neurons of all layers on sim0
# BUDGET = the bytes of those 20% (gate, up and down_t rows, predictor
# output row and bias). The cpu runs THREADS threads (default 1: the
# machine this was written on has 2 cores, the second one runs the
# simulated device's kernels: every configuration is 1 cpu thread, and all
# but dense and all-cpu also use sim0). sim0's waits poll SPIN_US
# microseconds before they block (LOOM_SIM_SPIN_US, as a GPU runtime spins
# on a fence; a condition-variable wake-up costs tens of microseconds here,
# several per token). The cpu comes first in --device: the scheduler
# offloads a node only to an earlier device. LOOM_SIM_PROFILE=1
# LOOM_LOG=sim:info prints sim0's time per op.
#
# Environment: SIM_GBPS (default 160), SPIN_US (300), THREADS (1), N (32), REPS (3),
# MODEL (/tmp/loom_sparse_placement.gguf), STORIES (../shared/models/
# stories260K.gguf: the vocabulary is borrowed), PYTHON (/usr/bin/python3,
# needs numpy).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build/release}
loom=$build/bin/loom
sim_dir=$build/sim_plugins
model=${MODEL:-/tmp/loom_sparse_placement.gguf}
stories=${STORIES:-$root/../shared/models/stories260K.gguf}
python=${PYTHON:-/usr/bin/python3}
gbps=${SIM_GBPS:-160}
spin=${SPIN_US:-300}
threads=${THREADS:-1}
n=${N:-32}
reps=${REPS:-3}
dim=512 layers=8 ffn=4096 rank=32

[ -x "$loom" ] || { echo "sparse_placement.sh: $loom not built (cmake --build $build --target loom_cli)" >&2; exit 1; }
[ -e "$sim_dir/libloom-sim.so" ] || { echo "sparse_placement.sh: no sim plugin in $sim_dir (build the tests: --target loom-sim)" >&2; exit 1; }
if [ ! -e "$model" ]; then
  "$python" "$root/tools/make_sparse_gguf.py" "$model" --tokenizer-from "$stories" --dim $dim --layers $layers \
    --heads 8 --ffn $ffn --sparsity 0.9 --recall 0.99 --rank-true $rank --type f32 --seed 1 >&2
fi
# One neuron's rows: gate, up, down_t (dim f32 each), pred_out (2 x rank f32), its bias.
neuron_bytes=$(( (3 * dim + 2 * rank) * 4 + 4 ))
budget=$(( ffn * layers / 5 * neuron_bytes ))

export LOOM_SIM_DEVICES=1 LOOM_SIM_ASYNC=1 LOOM_SIM_GBPS_0=$gbps LOOM_SIM_SPIN_US=$spin
names=(dense all-cpu layer layer-ngl hot/cold)
args=("--device cpu --sparse off"
      "--device cpu"
      "--device cpu,sim0 -ngl 0 -ot blk\\.0\\.ffn_.*=sim0"
      "--device cpu,sim0 -ngl 1"
      "--device cpu,sim0 --sparse-budget $budget")
declare -A samples
for ((r = 0; r < reps; ++r)); do
  for i in "${!names[@]}"; do
    # shellcheck disable=SC2086
    out=$("$loom" run --plugin-path "$sim_dir" -m "$model" -p "Once upon a time" -n "$n" -t "$threads" ${args[$i]} 2>&1) ||
      { echo "$out" >&2; exit 1; }
    tps=$(sed -n 's/.*generated [0-9]* tokens, \([0-9.]*\) tokens\/s.*/\1/p' <<<"$out")
    [ -n "$tps" ] || { echo "sparse_placement.sh: no decode rate in: $out" >&2; exit 1; }
    samples[$i]="${samples[$i]:-} $tps"
  done
done
median() { tr ' ' '\n' <<<"$1" | sed '/^$/d' | sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
echo "model $model (dim $dim, $layers layers, ffn $ffn, f32); sim0 $gbps GB/s, spin $spin us; cpu $threads thread(s); budget $budget bytes; tg$n, median of $reps"
echo
echo "| placement | arguments | decode t/s (median) | samples |"
echo "| --- | --- | ---: | --- |"
for i in "${!names[@]}"; do
  echo "| ${names[$i]} | \`${args[$i]}\` | $(median "${samples[$i]}") |${samples[$i]} |"
done
