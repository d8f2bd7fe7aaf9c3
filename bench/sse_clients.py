"""Streamed completions for serve_bench.py, all on one thread.

Every request is a socket of its own in one selector: a wake-up reads every
stream that has data, so 16 clients cost one thread's wake-ups instead of 16
threads' (a thread per client under Python's GIL took 13-15% of a core on a
2-core machine, most of it switching threads: CPU the server's step then
lacks). Each token's arrival time is taken when its bytes are read, as the
threaded client does.

Only the Python standard library. HTTP/1.1 with `Connection: close`; the
server answers a stream with chunked transfer encoding (server-sent events).
"""
import json
import selectors
import socket
import time


def stream_body(prompt, max_tokens):
    """The request serve_bench streams: greedy, every token generated."""
    return {"prompt": prompt, "max_tokens": max_tokens, "temperature": 0, "stream": True,
            "stream_options": {"include_usage": True}, "ignore_eos": True}


class _Stream:
    """One streamed completion: (ttft, [gaps between tokens], completion tokens) to done()."""

    def __init__(self, loop, body, done):
        self.loop, self.done = loop, done
        self.t0 = time.perf_counter()
        payload = json.dumps(body).encode()
        self.out = (b"POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                    b"Content-Length: %d\r\nConnection: close\r\n\r\n" % len(payload)) + payload
        self.raw = b""      # bytes read, not yet decoded
        self.events = b""   # the decoded body, not yet split into events
        self.header = True
        self.ttft, self.last, self.gaps, self.tokens = None, None, [], 0
        self.finished = False  # [DONE] seen
        self.ended = False     # the body's last chunk read
        self.sock = socket.create_connection(("127.0.0.1", loop.port))
        self.sock.setblocking(False)
        loop.sel.register(self.sock, selectors.EVENT_WRITE, self)

    def on_ready(self, mask):
        if mask & selectors.EVENT_WRITE:
            n = self.sock.send(self.out)
            self.out = self.out[n:]
            if not self.out:
                self.loop.sel.modify(self.sock, selectors.EVENT_READ, self)
            return
        data = self.sock.recv(1 << 16)
        now = time.perf_counter()
        if not data:
            return self.finish(now)
        self.raw += data
        if self.header:
            end = self.raw.find(b"\r\n\r\n")
            if end < 0:
                return
            head, self.raw = self.raw[:end].decode("latin-1"), self.raw[end + 4:]
            status = int(head.split(" ", 2)[1])
            if status != 200:
                raise RuntimeError("stream -> %d %s" % (status, head[:300]))
            if "transfer-encoding: chunked" not in head.lower():
                raise RuntimeError("stream: not a chunked answer: " + head[:300])
            self.header = False
        self.dechunk()
        while not self.finished:
            end = self.events.find(b"\n\n")
            if end < 0:
                break
            event, self.events = self.events[:end], self.events[end + 2:]
            self.on_event(event, now)
        if self.finished or self.ended:
            self.finish(now)

    def dechunk(self):
        while True:
            eol = self.raw.find(b"\r\n")
            if eol < 0:
                return
            size = int(self.raw[:eol].split(b";")[0], 16)
            if len(self.raw) < eol + 2 + size + 2:
                return
            self.events += self.raw[eol + 2:eol + 2 + size]
            self.raw = self.raw[eol + 2 + size + 2:]
            if size == 0:
                self.ended = True
                return

    def on_event(self, event, now):
        for line in event.split(b"\n"):
            if not line.startswith(b"data: "):
                continue
            payload = line[6:].strip()
            if payload == b"[DONE]":
                self.finished = True
                return
            ev = json.loads(payload)
            if ev.get("usage"):
                self.tokens = ev["usage"]["completion_tokens"]
            if ev.get("choices") and ev["choices"][0].get("text"):
                if self.ttft is None:
                    self.ttft = now - self.t0
                elif self.last is not None:
                    self.gaps.append(now - self.last)
                self.last = now

    def finish(self, now):
        if self.sock is None:
            return
        self.loop.sel.unregister(self.sock)
        self.sock.close()
        self.sock = None
        self.loop.open -= 1
        self.done((self.ttft if self.ttft is not None else now - self.t0, self.gaps, self.tokens))


class Loop:
    """Streams on one thread: start() any number, then run() until all are done
    (a done callback may start more)."""

    def __init__(self, port):
        self.port = port
        self.sel = selectors.DefaultSelector()
        self.open = 0

    def start(self, prompt, max_tokens, done):
        self.open += 1
        _Stream(self, stream_body(prompt, max_tokens), done)

    def run(self):
        while self.open:
            for key, mask in self.sel.select():
                key.data.on_ready(mask)
        self.sel.close()


def run_clients(port, prompts, requests, max_tokens):
    """len(prompts) clients, each streaming `requests` completions of its prompt
    one after another: the results in the order they finished."""
    loop, results = Loop(port), []

    def client(i, left):
        if left > 0:
            loop.start(prompts[i], max_tokens, lambda r: (results.append(r), client(i, left - 1)))

    for i in range(len(prompts)):
        client(i, requests)
    loop.run()
    return results


def run_arrivals(port, mine, max_tokens, arriving, first_words):
    """One stream per prompt of `mine`; while any runs, the prompts of `arriving`
    (each after a new first word: no prefix reuse) arrive one after another,
    one token each. Returns (the running streams' results, arrivals)."""
    loop, results, arrivals, started = Loop(port), [], [0], [0]

    def ran(r):
        results.append(r)

    def arrive(r=None):
        if r is not None:
            arrivals[0] += 1
        if len(results) == len(mine):
            return
        k = started[0]
        started[0] = k + 1
        loop.start(first_words[k % len(first_words)] + " " + arriving[k % len(arriving)], 1, arrive)

    for p in mine:
        loop.start(p, max_tokens, ran)
    if arriving:
        arrive()
    loop.run()
    return results, arrivals[0]
