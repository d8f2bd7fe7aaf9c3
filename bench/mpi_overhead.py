#!/usr/bin/env python3
"""What a remote split costs (issue 33): decode and prefill of a model whose
layers are shared out over R MPI ranks on this host's loopback, against the
same model in one process; and what each decode step sends.

    bench/mpi_overhead.py [--build build/release] [--rounds 3] [--reps 2] [-n 64] [-p 64] [-b 16]

For each model (stories260K and a synthetic llama made once with
../shared/tools/make_synth_gguf.py, dim 512 x 8 layers F32, into
$LOOM_BENCH_MODELS or /tmp/loom-bench-models; needs python3-numpy):

  R=1  loom bench --device cpu                          (one process)
  R=2  mpirun -np 2 loom bench --device r1.cpu,cpu -ts 1,1
  R=3  mpirun -np 3 loom bench --device r1.cpu,r2.cpu,cpu -ts 1,1,1
  R=3d mpirun -np 3 loom bench --device r1.cpu,r2.cpu -ts 1,1   (rank 0 only drives)

(--ranks picks them) every rank with one thread (LOOM_CPU_THREADS=1);
--rounds rounds, each running every configuration once (`-r --reps`),
medians over the rounds. Decode: ms per token and the extra over R=1.
Prefill: -p tokens in m = p / b micro-batches (-b); speed-up over R=1 and
the efficiency speed-up / H over the H ranks that hold layers, beside the
pipelined ideal m / (m + H - 1). Per step: two `loom run`s (16 and 48 tokens) under
LOOM_LOG=mpi:info; the difference of the "messages sent" / "replies
received" counts over the 32 extra steps gives the messages (each one
request/reply round trip, headers included; the posted ones, runs and rank
to rank copies whose replies rank 0 collects later, apart) and the bytes rank 0
sent and received per decode step, and the graphs sent in them (0: plan
reuse).
Prints a markdown table.
"""
import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SHARED = os.path.abspath(os.path.join(HERE, "..", "..", "shared"))


def mpirun(np_):
    cmd = ["mpirun", "--oversubscribe", "--mca", "btl", "self,tcp", "--mca", "btl_tcp_if_include", "lo",
           "--mca", "oob_tcp_if_include", "lo", "-x", "LOOM_CPU_THREADS", "-x", "LOOM_LOG"]
    if os.getuid() == 0:
        cmd.append("--allow-run-as-root")
    return cmd + ["-np", str(np_)]


def parse_config(text):
    """"R": R ranks sharing the layers, rank 0's cpu among them; "Rd": R ranks, rank 0 only drives (the R - 1
    workers hold every layer and the output). Returns (ranks, holders of layers)."""
    drive = text.endswith("d")
    r = int(text[:-1] if drive else text)
    if r < 1 or (drive and r < 2):
        sys.exit(f"--ranks: bad configuration {text!r}")
    return r, (r - 1 if drive else r)


def devices(cfg):
    r, holders = cfg
    names = [f"r{i}.cpu" for i in range(1, r)] + (["cpu"] if holders == r else [])
    return ["--device", ",".join(names)] + (["-ts", ",".join(["1"] * holders)] if len(names) > 1 else [])


def launch(cfg, loom, args, log=""):
    r = cfg[0]
    env = dict(os.environ, LOOM_CPU_THREADS="1", LOOM_LOG=log or os.environ.get("LOOM_LOG", "*:warn"))
    cmd = (mpirun(r) if r > 1 else []) + [loom] + args + devices(cfg)
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, errors="replace", timeout=900)
    if p.returncode != 0:
        sys.exit(f"failed ({p.returncode}): {' '.join(cmd)}\n{p.stderr[-2000:]}")
    return p


def bench(r, loom, model, a):
    p = launch(r, loom, ["bench", "-m", model, "-p", str(a.p), "-b", str(a.b), "-n", str(a.n), "-r", str(a.reps),
                         "--json"])
    res = {x["test"]: x for x in json.loads(p.stdout)["results"]}
    return res[f"pp{a.p}"]["avg_ts"], res[f"tg{a.n}"]["avg_ts"]


def counts(stderr, what):
    """{kind: (messages, bytes)} of the "messages sent:" or "replies received:" line."""
    line = next((l for l in stderr.splitlines() if what in l), "")
    return {k: (int(n), int(b)) for k, n, b in re.findall(r" (\w+) (\d+) \((\d+) B\)", line)}


def posted_count(text):
    """Requests rank 0 posted without waiting for their replies (runs, rank to rank copies: collected with
    the rank's next reply), so no round trip of their own: the "messages posted:" line."""
    line = next((ln for ln in text.splitlines() if "messages posted:" in ln), "")
    return sum(int(n) for _, n in re.findall(r" (\w+) (\d+)", line.split("messages posted:", 1)[-1]))


def per_step(r, loom, model):
    """Per decode step: round trips (requests rank 0 waits for), posted requests, bytes sent, bytes received;
    graphs sent in 32 steps."""
    runs = [launch(r, loom, ["run", "-m", model, "-n", str(n)], log="mpi:info").stderr for n in (16, 48)]
    steps = 32

    def diff(what, i):
        a, b = counts(runs[0], what), counts(runs[1], what)
        return sum(b[k][i] - a.get(k, (0, 0))[i] for k in b)

    graphs = counts(runs[1], "messages sent:").get("graph", (0, 0))[0] - \
        counts(runs[0], "messages sent:").get("graph", (0, 0))[0]
    posted = posted_count(runs[1]) - posted_count(runs[0])
    return ((diff("messages sent:", 0) - posted) / steps, posted / steps, diff("messages sent:", 1) / steps,
            diff("replies received:", 1) / steps, graphs)


def make_synth(a):
    d = os.environ.get("LOOM_BENCH_MODELS", "/tmp/loom-bench-models")
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, "mpi-s512x8-f32.gguf")
    if not os.path.exists(path):
        tool = os.path.join(SHARED, "tools", "make_synth_gguf.py")
        subprocess.run(["/usr/bin/python3", tool, path, "--tokenizer-from", a.stories, "--dim", "512", "--layers", "8",
                        "--heads", "8", "--kv-heads", "8", "--ffn", "1536", "--type", "f32", "--seed", "3"],
                       check=True, capture_output=True)
    return path


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build/release")
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("-n", type=int, default=64)
    ap.add_argument("-p", type=int, default=64)
    ap.add_argument("-b", type=int, default=16)
    ap.add_argument("--ranks", default="1,2,3,3d",
                    help="configurations: R (R ranks share the layers, rank 0's cpu too) or Rd (rank 0 only drives)")
    ap.add_argument("--stories", default=os.path.join(SHARED, "models", "stories260K.gguf"))
    ap.add_argument("--no-synth", action="store_true")
    a = ap.parse_args()
    loom = os.path.join(a.build, "bin", "loom")
    if not shutil.which("mpirun"):
        sys.exit("mpirun not found (apt-get install openmpi-bin)")
    models = [("stories260K", a.stories)]
    if not a.no_synth:
        models.append(("synth 512x8 f32", make_synth(a)))
    m = a.p // a.b
    ranks = [parse_config(x) for x in a.ranks.split(",")]
    print(f"| model | R | tg ms/token | +ms vs R=1 | round trips/step | posted/step | B sent/step | B received/step "
          f"| graphs in 32 steps | pp{a.p} t/s (m={m}) | pp speed-up | efficiency | m/(m+R-1) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for name, path in models:
        # Rounds interleave the configurations so drift on a shared machine
        # hits all alike; medians over the rounds.
        tg = {r: [] for r in ranks}
        pp = {r: [] for r in ranks}
        for _ in range(a.rounds):
            for r in ranks:
                p_ts, t_ts = bench(r, loom, path, a)
                pp[r].append(p_ts)
                tg[r].append(1000.0 / t_ts)
        base_tg, base_pp = statistics.median(tg[ranks[0]]), statistics.median(pp[ranks[0]])
        for r in ranks:
            ms, pps = statistics.median(tg[r]), statistics.median(pp[r])
            msgs, posted, out, back, graphs = per_step(r, loom, path) if r[0] > 1 else (0, 0, 0, 0, 0)
            speed = pps / base_pp
            h = r[1]  # ranks holding layers: the pipeline's stages
            label = f"{r[0]}" if h == r[0] else f"{r[0]} (rank 0 drives)"
            print(f"| {name} | {label} | {ms:.2f} | {ms - base_tg:+.2f} | {msgs:.1f} | {posted:.1f} | {out:.0f} | {back:.0f} | {graphs} "
                  f"| {pps:.0f} | {speed:.2f} | {speed / h:.2f} | {m / (m + h - 1):.2f} |", flush=True)

if __name__ == "__main__":
    main()
