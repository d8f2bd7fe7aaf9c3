#!/usr/bin/env python3
"""Independent check of tokenizer test expectations (no loom code involved).

Reads the vocab of a GGUF file with a tiny parser of its own, prints the vocab
entries a string touches, and encodes it with a deliberately naive SPM merge
(rescan all pairs every step; best score wins, leftmost on ties; byte fallback
<0xXX> for pieces not in the vocab).

  python3 tests/llm/dump_vocab.py ../shared/models/stories260K.gguf "Once upon a time" "Hello world"
"""
import struct
import sys


def read_vocab(path):
    data = open(path, "rb").read()
    pos = 0

    def take(fmt):
        nonlocal pos
        v = struct.unpack_from("<" + fmt, data, pos)
        pos += struct.calcsize("<" + fmt)
        return v[0]

    def string():
        n = take("Q")
        nonlocal pos
        s = data[pos:pos + n]
        pos += n
        return s.decode("utf-8", "replace")

    sizes = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}

    def value(t):
        if t == 8:
            return string()
        if t == 9:
            et, n = take("I"), take("Q")
            return [value(et) for _ in range(n)]
        return take(sizes[t])

    assert data[:4] == b"GGUF"
    pos = 4
    take("I")
    take("Q")
    n_kv = take("Q")
    kv = {}
    for _ in range(n_kv):
        k = string()
        kv[k] = value(take("I"))
    return kv


def encode(text, tokens, scores, types):
    index = {t: i for i, t in enumerate(tokens)}
    text = "\u2581" + text.replace(" ", "\u2581")
    syms = list(text)  # python str: one entry per code point
    while True:
        best = None
        for i in range(len(syms) - 1):
            m = syms[i] + syms[i + 1]
            if m in index and (best is None or scores[index[m]] > best[0]):
                best = (scores[index[m]], i)
        if best is None:
            break
        i = best[1]
        syms[i:i + 2] = [syms[i] + syms[i + 1]]
    ids = []
    for s in syms:
        if s in index:
            ids.append(index[s])
        else:
            ids += [index["<0x%02X>" % b] for b in s.encode("utf-8")]
    return syms, ids


def main():
    kv = read_vocab(sys.argv[1])
    tokens = kv["tokenizer.ggml.tokens"]
    scores = kv["tokenizer.ggml.scores"]
    types = kv["tokenizer.ggml.token_type"]
    print("vocab", len(tokens), "bos", kv.get("tokenizer.ggml.bos_token_id"), "eos",
          kv.get("tokenizer.ggml.eos_token_id"), "unk", kv.get("tokenizer.ggml.unknown_token_id"))
    print("first 10:", [(i, tokens[i], scores[i], types[i]) for i in range(10)])
    for text in sys.argv[2:]:
        syms, ids = encode(text, tokens, scores, types)
        print(repr(text), "->", ids)
        for s in syms:
            i = tokens.index(s) if s in tokens else None
            print("   ", repr(s), i, scores[i] if i is not None else "byte fallback")


if __name__ == "__main__":
    main()
