#!/usr/bin/env python3
"""Load benchmark of `loom serve` on the loopback.

Starts `loom serve -m MODEL --port 0 --parallel P`, then, in one run:
  1. C concurrent clients x R streamed completions each, for C in --clients
     (default 1 4 16): aggregate generated tokens/s, time to first token
     (TTFT) p50/p99, time between tokens (TBT) p50/p99;
  2. TBT of up to 4 running streams of 2x --max-tokens, alone (the control)
     and then while new 256-token prompts keep arriving (chunked prefill
     keeps them flowing), against the 1-client TBT and against the control;
  3. a shared 200-token system prompt: the time to first token of a request
     whose system prompt another request read before, against the same
     request with a system prompt nobody read (prefix reuse);
  4. `loom bench -m MODEL` on the same machine (its pp rate: the target for
     the aggregate rate at 16 clients, whose batched steps read the weights
     once for all sequences).
Prints a markdown table and the ratios; --json writes them too.

The clients run on one thread (sse_clients.py: every stream's socket in one
selector); --client threads runs each on a thread of its own with
http.client, as this benchmark did before (on a 2-core machine those threads
take CPU the server lacks). Only the Python standard library: run with
/usr/bin/python3. The generated text is not checked here (tests/serve does).
"""
import argparse
import http.client
import json
import os
import re
import statistics
import subprocess
import sys
import threading
import time

import sse_clients

WORDS = ("once upon a time there was a little girl named lily she loved to play outside in the park "
         "one day she saw a big red ball and wanted to play with it but it was too high").split()


def pct(values, p):
    if not values:
        return float("nan")
    v = sorted(values)
    k = min(len(v) - 1, max(0, int(round(p / 100.0 * (len(v) - 1)))))
    return v[k]


class Server:
    def __init__(self, loom, model, parallel, ctx, extra, log=None):
        cmd = [loom, "serve", "-m", model, "--port", "0", "--parallel", str(parallel), "-c", str(ctx)] + extra
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.port = None
        deadline = time.time() + 120
        while time.time() < deadline:
            line = self.proc.stdout.readline()
            if not line:
                break
            m = re.search(r"listening on http://[^:]+:(\d+)", line)
            if m:
                self.port = int(m.group(1))
                break
        if self.port is None:
            self.proc.kill()
            err = self.proc.stderr.read()
            sys.exit("serve_bench: loom serve did not start: " + err[-2000:])
        # Keep draining stdout so the server never blocks on a full pipe.
        threading.Thread(target=lambda: [None for _ in self.proc.stdout], daemon=True).start()
        def drain_stderr():
            out = open(log, "w") if log else None
            for line in self.proc.stderr:
                if out:
                    out.write(line)
                    out.flush()

        threading.Thread(target=drain_stderr, daemon=True).start()
        self.wait_ready()

    def wait_ready(self):
        deadline = time.time() + 120
        while time.time() < deadline:
            try:
                c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=5)
                c.request("GET", "/health")
                if c.getresponse().status == 200:
                    return
            except OSError:
                pass
            time.sleep(0.1)
        sys.exit("serve_bench: the server never became healthy")

    def post(self, path, body):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=600)
        c.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
        r = c.getresponse()
        data = r.read()
        if r.status != 200:
            raise RuntimeError("%s -> %d %s" % (path, r.status, data[:300]))
        return json.loads(data)

    def stream(self, prompt, max_tokens):
        """One streamed completion: (ttft, [gaps between tokens], completion tokens)."""
        body = sse_clients.stream_body(prompt, max_tokens)
        t0 = time.perf_counter()
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=600)
        c.request("POST", "/v1/completions", json.dumps(body), {"Content-Type": "application/json"})
        r = c.getresponse()
        if r.status != 200:
            raise RuntimeError("stream -> %d %s" % (r.status, r.read()[:300]))
        ttft, last, gaps, tokens = None, None, [], 0
        while True:
            line = r.readline()
            if not line:
                break
            line = line.strip()
            if not line.startswith(b"data: "):
                continue
            payload = line[6:]
            if payload == b"[DONE]":
                break
            ev = json.loads(payload)
            now = time.perf_counter()
            if ev.get("usage"):
                tokens = ev["usage"]["completion_tokens"]
            if ev.get("choices") and ev["choices"][0].get("text"):
                if ttft is None:
                    ttft = now - t0
                elif last is not None:
                    gaps.append(now - last)
                last = now
        c.close()
        return (ttft if ttft is not None else time.perf_counter() - t0), gaps, tokens

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def prompt_of(server, n_tokens, seed):
    """A prompt of about n_tokens tokens (sized with /tokenize)."""
    words = [WORDS[(seed * 7 + i * 3) % len(WORDS)] for i in range(n_tokens * 2)]
    text = " ".join(words)
    toks = server.post("/tokenize", {"content": text})["tokens"]
    while len(toks) > n_tokens and words:
        words = words[: max(1, int(len(words) * n_tokens / len(toks)) - 1)]
        text = " ".join(words)
        toks = server.post("/tokenize", {"content": text})["tokens"]
    return text


def run_clients(server, clients, requests, max_tokens, prompt_tokens, threaded):
    results, lock = [], threading.Lock()
    prompts = [prompt_of(server, prompt_tokens, i) for i in range(clients)]

    def client(i):
        for _ in range(requests):
            r = server.stream(prompts[i], max_tokens)
            with lock:
                results.append(r)

    t0, cpu0 = time.perf_counter(), time.process_time()
    if threaded:
        threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    else:
        results = sse_clients.run_clients(server.port, prompts, requests, max_tokens)
    wall = time.perf_counter() - t0
    client_cpu = (time.process_time() - cpu0) / wall  # this process's CPU: the clients' cost to the machine
    tokens = sum(r[2] for r in results)
    gaps = [g for r in results for g in r[1]]
    ttfts = [r[0] for r in results]
    return {"clients": clients, "requests": clients * requests, "tokens": tokens, "seconds": wall,
            "tokens_per_s": tokens / wall, "ttft_p50": pct(ttfts, 50), "ttft_p99": pct(ttfts, 99),
            "tbt_p50": pct(gaps, 50), "tbt_p99": pct(gaps, 99), "client_cpu": client_cpu}


def run_arrivals(server, streams, max_tokens, prompt_tokens, arrival_tokens, threaded, arriving_prompts=True):
    """TBT of `streams` running streams while 256-token prompts keep arriving
    (or, arriving_prompts=False, of the same streams alone: the control)."""
    stop = threading.Event()
    results, lock = [], threading.Lock()
    arrivals = [0]

    # Prompts sized before the clock starts (sizing them asks the server).
    mine = [prompt_of(server, prompt_tokens, 100 + i) for i in range(streams)]
    arriving = [prompt_of(server, arrival_tokens, 200 + k) for k in range(16)] if arriving_prompts else []
    if not threaded:
        results, n = sse_clients.run_arrivals(server.port, mine, max_tokens, arriving, WORDS)
        gaps = [g for r in results for g in r[1]]
        return {"streams": streams, "arrivals": n, "tbt_p50": pct(gaps, 50), "tbt_p99": pct(gaps, 99)}

    def runner(i):
        r = server.stream(mine[i], max_tokens)
        with lock:
            results.append(r)

    def arriver():
        k = 0
        while not stop.is_set():
            # A new prompt each time (a different first word: no prefix reuse).
            server.stream(WORDS[k % len(WORDS)] + " " + arriving[k % len(arriving)], 1)
            k += 1
            arrivals[0] = k

    threads = [threading.Thread(target=runner, args=(i,)) for i in range(streams)]
    feeder = threading.Thread(target=arriver) if arriving_prompts else None
    if feeder:
        feeder.start()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    stop.set()
    if feeder:
        feeder.join()
    gaps = [g for r in results for g in r[1]]
    return {"streams": streams, "arrivals": arrivals[0], "tbt_p50": pct(gaps, 50), "tbt_p99": pct(gaps, 99)}


def run_prefix(server, sys_tokens):
    a = prompt_of(server, sys_tokens, 300)
    b = prompt_of(server, sys_tokens, 301)  # another system prompt: nobody read it
    q1, q2 = " the question one is", " and the second question is"
    server.stream(a + q1, 4)
    warm = min(server.stream(a + q2 + " " + WORDS[i], 1)[0] for i in range(3))
    cold = server.stream(b + q2, 1)[0]
    return {"system_tokens": sys_tokens, "ttft_cold": cold, "ttft_warm": warm, "speedup": cold / warm}


def loom_bench_pp(loom, model, extra):
    out = subprocess.run([loom, "bench", "-m", model, "--json"] + extra, capture_output=True, text=True)
    try:
        d = json.loads(out.stdout)
    except ValueError:
        return None
    for r in d.get("results", []):
        if str(r.get("test", "")).startswith("pp"):
            return r.get("avg_ts")
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-m", "--model", required=True)
    ap.add_argument("--loom", default=os.path.join(os.path.dirname(__file__), "..", "build", "release", "bin", "loom"))
    ap.add_argument("--clients", type=int, nargs="+", default=[1, 4, 16])
    ap.add_argument("--requests", type=int, default=3, help="requests per client")
    ap.add_argument("--max-tokens", type=int, default=128)
    ap.add_argument("--prompt-tokens", type=int, default=16)
    ap.add_argument("--ctx", type=int, default=1024, help="context per slot")
    ap.add_argument("--serve-arg", action="append", default=[], help="extra argument for loom serve (repeatable)")
    ap.add_argument("--client", choices=["loop", "threads"], default="loop",
                    help="the clients on one thread (default) or each on a thread of its own")
    ap.add_argument("--json", help="write the results here")
    ap.add_argument("--server-log", help="write the server's stderr here (e.g. with LOOM_LOG=serve:debug,sched:debug)")
    a = ap.parse_args()
    parallel = max(a.clients)
    server = Server(a.loom, a.model, parallel, a.ctx, a.serve_arg, a.server_log)
    threaded = a.client == "threads"
    out = {"model": os.path.basename(a.model), "client": a.client, "load": [], "streams_alone": None,
           "arrivals": None, "prefix": None}
    try:
        server.stream(prompt_of(server, a.prompt_tokens, 0), 4)  # warm up
        for c in a.clients:
            r = run_clients(server, c, a.requests, a.max_tokens, a.prompt_tokens, threaded)
            out["load"].append(r)
            print("clients %2d: %7.1f tokens/s  TTFT p50 %6.1f ms p99 %6.1f ms  TBT p50 %6.1f ms p99 %6.1f ms  "
                  "(client CPU %.0f%% of a core)" %
                  (c, r["tokens_per_s"], 1e3 * r["ttft_p50"], 1e3 * r["ttft_p99"], 1e3 * r["tbt_p50"],
                   1e3 * r["tbt_p99"], 100 * r["client_cpu"]), flush=True)
        streams = min(4, parallel - 1)
        out["streams_alone"] = run_arrivals(server, streams, a.max_tokens * 2, a.prompt_tokens, 256, threaded, False)
        print("%d running streams alone (the control): TBT p50 %.1f ms p99 %.1f ms" %
              (streams, 1e3 * out["streams_alone"]["tbt_p50"], 1e3 * out["streams_alone"]["tbt_p99"]), flush=True)
        out["arrivals"] = run_arrivals(server, streams, a.max_tokens * 2, a.prompt_tokens, 256, threaded)
        print("the same streams with 256-token prompts arriving (%d arrived): TBT p50 %.1f ms p99 %.1f ms" %
              (out["arrivals"]["arrivals"], 1e3 * out["arrivals"]["tbt_p50"], 1e3 * out["arrivals"]["tbt_p99"]),
              flush=True)
        out["prefix"] = run_prefix(server, 200)
        print("shared 200-token system prompt: TTFT cold %.1f ms, warm %.1f ms (%.1fx)" %
              (1e3 * out["prefix"]["ttft_cold"], 1e3 * out["prefix"]["ttft_warm"], out["prefix"]["speedup"]),
              flush=True)
    finally:
        server.stop()
    # The same devices as the server (its --device / -t arguments).
    out["bench_pp"] = loom_bench_pp(a.loom, a.model, a.serve_arg)
    one = next((r for r in out["load"] if r["clients"] == 1), None)
    top = out["load"][-1]
    print()
    print("| clients | requests | tokens/s | TTFT p50 ms | TTFT p99 ms | TBT p50 ms | TBT p99 ms |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for r in out["load"]:
        print("| %d | %d | %.1f | %.1f | %.1f | %.1f | %.1f |" %
              (r["clients"], r["requests"], r["tokens_per_s"], 1e3 * r["ttft_p50"], 1e3 * r["ttft_p99"],
               1e3 * r["tbt_p50"], 1e3 * r["tbt_p99"]))
    print()
    if one:
        print("aggregate at %d clients / 1 client: %.2fx" % (top["clients"], top["tokens_per_s"] / one["tokens_per_s"]))
    if out["bench_pp"]:
        print("aggregate at %d clients / loom bench pp (%.1f t/s): %.0f%%" %
              (top["clients"], out["bench_pp"], 100.0 * top["tokens_per_s"] / out["bench_pp"]))
    if one and out["arrivals"]:
        print("TBT p99 with prompts arriving / 1-client TBT p99: %.2fx" % (out["arrivals"]["tbt_p99"] / one["tbt_p99"]))
    if out["streams_alone"] and out["arrivals"]:
        print("TBT p99 with prompts arriving / the same streams alone: %.2fx" %
              (out["arrivals"]["tbt_p99"] / out["streams_alone"]["tbt_p99"]))
    if out["prefix"]:
        print("shared system prompt: second request's TTFT %.1fx faster" % out["prefix"]["speedup"])
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
