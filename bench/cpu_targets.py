#!/usr/bin/python3
"""The CPU speed targets of loom in one markdown table (bench/README.md).

Runs, on this machine and in one session, for each build given (the current
one, and optionally an older one for before/after ratios), alternating the
builds row by row so both see the same machine state:

  - `loom bench` decode (tg) and prefill (pp) tokens/s on synthetic
    768-dim x 12-layer models (F32, F16, Q8_0, Q4_0, and ../shared's
    Q4_K_M file of the same shape), a 2048-dim x 16-layer
    Q4_0 model (weights larger than L3), F16 / Q8_0 / Q4_0 models 2048 wide
    with as many layers as make them twice the last-level cache sysfs
    reports (named s2048xL-type), the 768-dim Q4_0 model's decode after
    a 1,024-token prompt (the KV cache read per token ~0.8x the weights),
    and stories260K decode, each as the
    median of --reps repetitions with the min..max spread, and tg as a
    fraction of the bound (weights + KV cache read per token, in each
    build's KV cache type / the median of the read bandwidths the newest
    build's loom bench runs measured);
  - loom_ops_bench: 1024^3 F32 GEMM against OpenBLAS cblas_sgemm in the
    same run, the dispatch cost per tiny node, decode GEMV weight GB/s
    (one GEMV in cache; a decode step's 72 GEMVs from memory),
    decode ATTENTION over an f32 and an f16 cache coming from memory, the
    read bandwidth with 1 and with 2 threads, and the peak f32 FMA / int8
    multiply-add rates measured on the spot.

Usage:
  bench/cpu_targets.py [--build build/release] [--before OLD_BUILD]
                       [--threads 2] [--reps 3] [--models DIR]

Synthetic models are made once with ../shared/tools/make_synth_gguf.py
(python3-numpy) into --models (default $LOOM_BENCH_MODELS or
/tmp/loom-bench-models). A build needs -DLOOM_BUILD_BENCH=ON for the
loom_ops_bench rows (skipped with a note otherwise). OpenBLAS's
OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE are unset together for the ops rows so
it uses the kernels for this CPU (the table says so).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SHARED = os.path.join(os.path.dirname(ROOT), "shared")

SYNTH = [
    # name, dim, layers, heads, ffn, type
    ("s768-f32", 768, 12, 12, 2048, "f32"),
    ("s768-f16", 768, 12, 12, 2048, "f16"),
    ("s768-q8_0", 768, 12, 12, 2048, "q8_0"),
    ("s768-q4_0", 768, 12, 12, 2048, "q4_0"),
    ("s2048-q4_0", 2048, 16, 16, 5632, "q4_0"),
]



def last_level_cache_bytes():
    """The largest cache of cpu0 from sysfs (bytes), 32 MiB when unreadable."""
    best = 0
    base = "/sys/devices/system/cpu/cpu0/cache"
    try:
        for entry in os.listdir(base):
            try:
                with open(os.path.join(base, entry, "size")) as f:
                    text = f.read().strip()
            except OSError:
                continue
            mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:], 1)
            digits = text[:-1] if text[-1:] in "KMG" else text
            if digits.isdigit():
                best = max(best, int(digits) * mult)
    except OSError:
        pass
    return best or 32 << 20


# Decode on models at least twice the last-level cache (issue 34): 2048
# wide, 16 heads, 4 KV heads, FFN 5632, as many layers as it takes for the
# weights to pass 2x the L3 this machine reports (plus 5%).
BIG_DIM, BIG_HEADS, BIG_KV_HEADS, BIG_FFN = 2048, 16, 4, 5632
BYTES_PER_WEIGHT = {"f32": 4.0, "f16": 2.0, "q8_0": 34 / 32, "q4_0": 18 / 32}


def big_models(llc_bytes):
    """(name, dim, layers, heads, ffn, type, kv_heads) rows sized from the cache."""
    kv_dim = BIG_DIM // BIG_HEADS * BIG_KV_HEADS
    per_layer = 2 * BIG_DIM * BIG_DIM + 2 * BIG_DIM * kv_dim + 3 * BIG_DIM * BIG_FFN
    rows = []
    for typ in ("f16", "q8_0", "q4_0"):
        layers = -(-int(2.1 * llc_bytes) // int(per_layer * BYTES_PER_WEIGHT[typ]))
        rows.append((f"s2048x{layers}-{typ}", BIG_DIM, layers, BIG_HEADS, BIG_FFN, typ, BIG_KV_HEADS))
    return rows

# Models that come made (not by make_synth_gguf.py): the 768-dim x 12-layer
# speed model as a common GGUF quantizer writes Q4_K_M (Q4_K, Q6_K; seed 1).
SHARED_MODELS = {
    "s768-q4_k_m": os.path.join(SHARED, "models", "quant", "synth768-q4_k_m.gguf"),
}


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def make_models(folder, big):
    os.makedirs(folder, exist_ok=True)
    tool = os.path.join(SHARED, "tools", "make_synth_gguf.py")
    tok = os.path.join(SHARED, "models", "stories260K.gguf")
    for name, dim, layers, heads, ffn, typ, *kv in [r + (0,) for r in SYNTH] + big:
        path = os.path.join(folder, name + ".gguf")
        if os.path.exists(path):
            continue
        log(f"cpu_targets: making {path}")
        kv_args = ["--kv-heads", str(kv[0])] if kv[0] else []
        subprocess.run(["/usr/bin/python3", tool, "--tokenizer-from", tok, "--dim", str(dim), "--layers",
                        str(layers), "--heads", str(heads), "--ffn", str(ffn), "--type", typ, *kv_args, path],
                       check=True, stdout=subprocess.DEVNULL)


def env_for(build):
    env = dict(os.environ)
    lib = os.path.join(build, "lib")
    env["LD_LIBRARY_PATH"] = lib + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
    for k in ("LOOM_PLUGIN_PATH", "LOOM_CPU_VARIANT", "LOOM_CPU_MASK", "LOOM_CPU_THREADS", "LOOM_DEVICES"):
        env.pop(k, None)
    return env


def loom_bench(build, model, p, n, reps, threads, may_fail=False):
    """The JSON of one `loom bench` run; None when may_fail and the build
    cannot run the model (an older build without that weight type)."""
    cmd = [os.path.join(build, "bin", "loom"), "bench", "-m", model, "-p", str(p), "-n", str(n), "-r", str(reps),
           "--threads", str(threads), "--device", "cpu", "--json"]  # the cpu plugin alone (default: auto)
    out = subprocess.run(cmd, env=env_for(build), capture_output=True, text=True)
    if out.returncode != 0:
        if may_fail:
            log(f"cpu_targets: {' '.join(cmd)} failed, its cell stays empty: {out.stderr.strip()[-200:]}")
            return None
        raise RuntimeError(f"{' '.join(cmd)} failed: {out.stderr.strip()[-400:]}")
    return json.loads(out.stdout)


def ops_bench(build, filt):
    exe = os.path.join(build, "bin", "loom_ops_bench")
    if not os.path.exists(exe):
        return None
    env = env_for(build)
    env.pop("OPENBLAS_CORETYPE", None)
    env.pop("OPENBLAS_L2_SIZE", None)
    out = subprocess.run([exe, "--benchmark_filter=" + filt, "--benchmark_format=json",
                          "--benchmark_min_time=0.5"], env=env, capture_output=True, text=True)
    if out.returncode != 0:
        return None
    return {b["name"]: b for b in json.loads(out.stdout)["benchmarks"]}


def spread(samples):
    med = statistics.median(samples)
    return med, min(samples), max(samples)


def fmt(med, lo, hi, digits=0):
    return f"{med:.{digits}f} ({lo:.{digits}f}..{hi:.{digits}f})"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build", "release"))
    ap.add_argument("--before", default=None, help="an older build folder for before/after ratios")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--models", default=os.environ.get("LOOM_BENCH_MODELS", "/tmp/loom-bench-models"))
    a = ap.parse_args()
    builds = [("after", os.path.abspath(a.build))]
    if a.before:
        builds.insert(0, ("before", os.path.abspath(a.before)))
    llc = last_level_cache_bytes()
    big = big_models(llc)
    log(f"cpu_targets: last-level cache {llc / 2**20:.0f} MiB: models twice its size "
        + ", ".join(r[0] for r in big))
    make_models(a.models, big)
    stories = os.path.join(SHARED, "models", "stories260K.gguf")

    rows = []  # (target, {build: text}, ratio text)
    # (model, prompt, decode steps, what the row's name adds). The long
    # context: each decode step reads the K and V rows of 1,025..1,088
    # tokens (37 MB in f16 on the 768-dim model, 46 MB of Q4_0 weights), so
    # its bound is mostly the KV cache's; loom bench counts those bytes.
    runs = [
        ("s768-f32", 256, 64, ""), ("s768-f16", 256, 64, ""), ("s768-q8_0", 256, 64, ""),
        ("s768-q4_0", 256, 64, ""), ("s768-q4_k_m", 256, 64, ""), ("s2048-q4_0", 64, 32, ""),
        ("s768-q4_0", 1024, 64, " after a 1,024-token prompt"),
    ] + [(r[0], 16, 32, " (2x the L3)") for r in big]
    pp_f32 = {}
    all_res = []
    for name, p, n, note in runs:
        model = SHARED_MODELS.get(name, os.path.join(a.models, name + ".gguf"))
        if not os.path.exists(model):
            log(f"cpu_targets: {model} not found, row skipped")
            continue
        res = {}
        for label, build in builds:
            log(f"cpu_targets: {label}: {name} -p {p} -n {n}")
            r = loom_bench(build, model, p, n, a.reps, a.threads, may_fail=(label != builds[-1][0]))
            if r is not None:
                res[label] = r
        all_res.append((name, p, n, note, res))
    # One bandwidth for every bound: the median of the newest build's probes
    # (each loom bench measures its own; single probes swing with the host).
    # The older build's probes are only shown: builds before the huge-page
    # probe read 4 KiB pages, ~10% slower than the plugin's buffers, and
    # would lower the bound.
    bws = [res[builds[-1][0]]["bandwidth"]["read_gb_per_s"] for *_, res in all_res]
    bw = statistics.median(bws)
    old_bws = [res[l]["bandwidth"]["read_gb_per_s"] for *_, res in all_res for l, _ in builds[:-1] if l in res]
    # Which probe the newest build used, and over how much memory against
    # the last-level cache (older builds read 256 MiB with scalar loads).
    probe_of = next((res[builds[-1][0]]["bandwidth"] for *_, res in all_res if builds[-1][0] in res), {})
    probe_text = probe_of.get("probe", f"{probe_of.get('buffer_bytes', 0) / 2**20:.0f} MiB, scalar loads")
    kv_types = {l: res[l].get("kv_type", "f32") for *_, res in all_res[:1] for l, _ in builds if l in res}
    for name, p, n, note, res in all_res:
        for test in ("pp", "tg"):
            cells, meds = {}, {}
            for label, _ in builds:
                if label not in res:
                    cells[label] = "cannot read the file"
                    continue
                r = next(x for x in res[label]["results"] if x["test"].startswith(test))
                med, lo, hi = spread(r["samples_ts"])
                meds[label] = med
                text = fmt(med, lo, hi)
                if test == "tg":
                    # Weights + KV bytes per token (this build's JSON, or the
                    # newest's when an old one lacks the KV count) over the
                    # bandwidth this build's run measured.
                    g = res[label]["gen_bound"]
                    if "kv_bytes_per_token" not in g:
                        g = res[builds[-1][0]]["gen_bound"]
                    per_token = g["weight_bytes_per_token"] + g.get("kv_bytes_per_token", 0)
                    bound = bw * 1e9 / per_token
                    text += f" = {100 * med / bound:.0f}% of bound" if bound > 0 else ""
                    # Each repetition against the bandwidth probed right
                    # beside it (builds from 2026-11-24 on): the host's
                    # memory bandwidth swings with its other tenants, so
                    # this is the ratio to trust.
                    beside = r.get("beside_bound_ratios") or []
                    if beside:
                        bm, blo, bhi = spread([100 * x for x in beside])
                        text += f"; {bm:.0f}% ({blo:.0f}..{bhi:.0f}) of the bound probed beside each repetition"
                cells[label] = text
            if test == "pp" and name == "s768-f32" and not note:
                pp_f32 = meds
            extra = ""
            if test == "pp" and name in ("s768-q8_0", "s768-q4_0", "s768-q4_k_m") and pp_f32 and not note:
                extra = "; vs own F32 pp: " + ", ".join(f"{k} {meds[k] / pp_f32[k]:.2f}x" for k in meds)
            ratio = f"{meds['after'] / meds['before']:.2f}x" if "before" in meds and meds["before"] > 0 else ""
            rows.append((f"{name} {test}{p if test == 'pp' else n}{note if test == 'tg' else ''} t/s", cells,
                         ratio + extra))
    res = {}
    for label, build in builds:
        log(f"cpu_targets: {label}: stories260K")
        res[label] = loom_bench(build, stories, 16, 64, max(a.reps, 5), a.threads)
    cells, meds = {}, {}
    for label, _ in builds:
        r = next(x for x in res[label]["results"] if x["test"].startswith("tg"))
        med, lo, hi = spread(r["samples_ts"])
        meds[label] = med
        cells[label] = fmt(med, lo, hi) + f" = {1e6 / med:.0f} us/token"
    ratio = f"{meds['after'] / meds['before']:.2f}x" if "before" in meds else ""
    rows.append(("stories260K tg64 t/s", cells, ratio))

    # The ops rows of the current build only: a bench binary loads the plugins
    # of the build folder it was configured in, so an older copy would
    # measure the current plugins.
    for label, build in builds[-1:]:
        log(f"cpu_targets: {label}: loom_ops_bench")
        ops = ops_bench(build, "f32/K:1024|sgemm/K:1024|dispatch|peak|mul_mat/q4_0/K:768/M:2048/N:1/|attention_cold|"
                               "memory_read/[12]/|decode_chain/(f32|q4_0)|probe_vs_plain")
        if ops is None:
            rows.append((f"ops rows ({label})", {label: "loom_ops_bench not built (-DLOOM_BUILD_BENCH=ON)"}, ""))
            continue

        def get(prefix):
            return next((v for k, v in ops.items() if k.startswith(prefix)), None)

        gemm, blas = get("BM_loom_mul_mat/f32/K:1024"), get("BM_blas_sgemm/K:1024")
        if gemm and blas and "FLOP/s" in gemm:
            rows.append(("F32 GEMM 1024^3 vs OpenBLAS (speed ratio)",
                         {label: f"{gemm['FLOP/s'] / 1e9:.0f} GFLOP/s vs {blas['FLOP/s'] / 1e9:.0f}"},
                         f"{blas['real_time'] / gemm['real_time']:.2f}x OpenBLAS"))
        disp = get("BM_dispatch/1000")
        if disp and "s_per_node" in disp:
            rows.append(("dispatch, 1000 tiny nodes", {label: f"{disp['s_per_node'] * 1e9:.0f} ns/node"}, ""))
        gemv = get("BM_loom_mul_mat/q4_0/K:768/M:2048/N:1")
        if gemv and "weight_GB/s" in gemv:
            rows.append(("Q4_0 GEMV 768x2048 (in cache)", {label: f"{gemv['weight_GB/s']:.1f} GB/s weights"},
                         f"{gemv['bw_fraction']:.2f}x DRAM bandwidth"))
        # A decode step's weights alone (72 GEMVs, no other node): how much
        # of the probe the GEMVs keep between nodes.
        for typ in ("f32", "q4_0"):
            ch = get(f"BM_decode_chain/{typ}/")
            if ch and "weight_GB/s" in ch:
                rows.append((f"decode weight stream alone, {typ} (72 GEMVs of the 768-dim step, "
                             f"{ch['weight_bytes'] / 1e6:.0f} MB, 1 graph)",
                             {label: f"{ch['real_time']:.2f} ms = {ch['weight_GB/s']:.1f} GB/s"},
                             f"{ch['bw_fraction']:.2f}x the run's probe"))
        for typ in ("f32", "f16"):
            att = get(f"BM_attention_cold/{typ}/300")
            if att and "bytes_per_second" in att:
                rows.append((f"decode ATTENTION, {typ} cache from memory (12 heads of 64, 300 rows, 1 node)",
                             {label: f"{att['real_time']:.0f} us = {att['bytes_per_second'] / 1e9:.1f} GB/s K+V"},
                             f"{att['bytes_per_second'] / 1e9 / bw:.2f}x DRAM bandwidth"))
        # Read bandwidth with 1 and with 2 threads, one after the other: when
        # 2 threads read twice what 1 does, each core is at its own limit
        # (~31 GB/s on these VMs) and a bound taken then leaves a decode no
        # cycle to compute in; when 2 read barely more than 1, the cores
        # share a path that the decode can fill.
        rd1, rd2 = get("BM_memory_read/1/"), get("BM_memory_read/2/")
        if rd1 and rd2 and "bytes_per_second" in rd1 and "bytes_per_second" in rd2:
            one, two = rd1["bytes_per_second"] / 1e9, rd2["bytes_per_second"] / 1e9
            rows.append(("memory read 256 MiB, 1 thread / 2 threads", {label: f"{one:.1f} / {two:.1f} GB/s"},
                         f"2 threads = {two / one:.2f}x 1 thread"))
        # loom bench's probe against the loop anybody would write (issue 34:
        # the probe must read at least what a plain vectorized sum does),
        # alternated in one process so both see the same host.
        for t in (2, 1):
            pv = get(f"BM_probe_vs_plain/{t}/")
            if pv and "probe_GB/s" in pv:
                rows.append((f"host probe vs a plain vectorized sum, {t} thread{'s' if t > 1 else ''} "
                             f"(alternated, best pass each, {pv['buffer_MiB']:.0f} MiB)",
                             {label: f"{pv['probe_GB/s']:.1f} vs {pv['plain_GB/s']:.1f} GB/s"},
                             f"probe = {pv['probe_GB/s'] / pv['plain_GB/s']:.2f}x plain"))
        for name in ("BM_peak_fma/2", "BM_peak_int8/2"):
            pk = get(name)
            if pk and "MAC/s" in pk:
                rows.append((f"peak {pk.get('label', name)} x{a.threads}",
                             {label: f"{pk['MAC/s'] / 1e9:.0f} G multiply-adds/s"}, ""))

    labels = [l for l, _ in builds]
    old = (f"; the older build's own probes: median {statistics.median(old_bws):.1f} "
           f"({min(old_bws):.1f}..{max(old_bws):.1f})") if old_bws else ""
    kv = ", ".join(f"{l} {t}" for l, t in kv_types.items())
    print(f"threads {a.threads}, {a.reps} repetitions per row (median (min..max)); bound = (weights + KV "
          f"cache bytes per token) / {bw:.1f} GB/s, the median of the newest build's {len(bws)} bandwidth "
          f"probes ({min(bws):.1f}..{max(bws):.1f}; probe: {probe_text}){old}; KV cache: {kv} (each build's default, its bytes "
          f"counted); OpenBLAS rows with OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE unset")
    print()
    print("| target | " + " | ".join(labels) + " | after / before |")
    print("| --- | " + " | ".join("---:" for _ in labels) + " | --- |")
    for target, cells, ratio in rows:
        print(f"| {target} | " + " | ".join(cells.get(l, "") for l in labels) + f" | {ratio} |")


if __name__ == "__main__":
    main()
