#!/usr/bin/env python3
"""`loom serve` on the emulated cuda0 (tests/cuda/emu): four completions of
different prompts at once, so the cuda plugin runs the batched decode steps
(every sequence's rows in one product, ATTENTION's ranges form over one
cache); each text must equal `loom run`'s greedy continuation of its prompt
on the cpu.

Usage: emu_serve_test.py LOOM MODELS_DIR (the emulated plugin's environment
comes from ctest: LOOM_PLUGIN_PATH, LOOM_CUDA_DRIVER, ...)."""
import json
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.request

loom, models = sys.argv[1], os.environ.get("LOOM_MODELS_DIR") or sys.argv[2]
model = os.path.join(models, "stories260K.gguf")
if not os.path.exists(model):
    print(f"SKIP: {model} not found (set LOOM_MODELS_DIR)")
    sys.exit(77)

prompts = ["Once upon a time", "The cat", "Lily and her mom went to the park. They saw a big", "One day"]
n_tokens = 24


def cpu_text(prompt):
    env = dict(os.environ)
    for k in ("LOOM_PLUGIN_PATH", "LOOM_PLUGINS_SELECT"):
        env.pop(k, None)
    out = subprocess.run([loom, "run", "-m", model, "--device", "cpu", "-p", prompt, "--temp", "0", "-n", str(n_tokens)],
                         env=env, capture_output=True, text=True, check=True).stdout
    assert out.startswith(prompt), out
    return out[len(prompt):].rstrip("\n")


with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
server = subprocess.Popen([loom, "serve", "-m", model, "--device", "cuda0", "--port", str(port), "--parallel", "4"],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
fail = 0
try:
    base = f"http://127.0.0.1:{port}"
    for _ in range(600):
        try:
            with urllib.request.urlopen(base + "/health", timeout=2) as r:
                if r.status == 200:
                    break
        except Exception:
            time.sleep(0.1)
    else:
        print("FAIL: the server never became healthy")
        sys.exit(1)
    got = {}

    def complete(p):
        body = json.dumps({"prompt": p, "max_tokens": n_tokens, "temperature": 0}).encode()
        req = urllib.request.Request(base + "/v1/completions", body, {"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=600) as r:
            got[p] = json.load(r)["choices"][0]["text"]

    threads = [threading.Thread(target=complete, args=(p,)) for p in prompts]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for p in prompts:
        want = cpu_text(p)
        if got.get(p, "").rstrip("\n") == want:
            print(f"ok: {p!r} on cuda0, 4 at once")
        else:
            print(f"FAIL: {p!r}\n  cpu:   {want!r}\n  cuda0: {got.get(p)!r}")
            fail = 1
finally:
    server.terminate()
    try:
        out, _ = server.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        server.kill()
        out, _ = server.communicate()
    if "ready on cuda0:" not in out:
        print("FAIL: the server did not run on cuda0:\n" + out)
        fail = 1
sys.exit(fail)
