#!/usr/bin/env python3
"""Independent cross-check of loom's byte-level BPE (no loom code involved).

Writes random test strings and the ids an independent reference gives them,
in llama.cpp's .inp/.out format, so the vocab test runs them:

  python3 tests/llm/bpe_reference.py ../shared/models/vocab/ggml-vocab-qwen2.gguf /tmp/bpe --count 2000
  LOOM_MODELS_DIR=/tmp/bpe build/release/bin/test_llm --gtest_filter='Vocab/VocabFile.EveryCase*'

--pre NAME checks another pre-tokenizer on the same vocab: the GGUF is copied
with tokenizer.ggml.pre replaced (keep the file name: the test looks for the
five names). The reference: the patterns as written in the models'
tokenizer.json run by the `regex` module (pip install regex), with \s as
Unicode White_Space (Oniguruma's meaning); GPT-2's byte alphabet; GPT-2's own
merge loop (all occurrences of the lowest-ranked pair, repeatedly); llama 3's
rule that a piece which is a whole token skips merging.
"""
import argparse
import os
import random
import struct

import regex

from dump_vocab import read_vocab

WS = r"\t\n\x0b\x0c\r \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"


GPT2 = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"
PATS = {
  "llama-bpe": [r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"],
  "qwen2": [r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"],
  "gpt-2": [GPT2],
  "default": [r"[\p{P}\$\+<=>\^~\|]+", GPT2, r"\p{N}+", r"[0-9][0-9][0-9]"],
  "falcon": [r"[\p{P}\$\+<=>\^~\|`]+", GPT2, r"[0-9][0-9][0-9]"],
  "starcoder": [r"\p{N}", GPT2],
  "deepseek-coder": [r"[\r\n]", r"\s?\p{L}+", r"\s?\p{P}+", "[\u4e00-\u9fa5\u0800-\u4e00\uac00-\ud7ff]+", r"\p{N}"],
  "deepseek-llm": [r"[\r\n]", r"\s?[A-Za-z\U000000B5\U000000C0-\U000000D6\U000000D8-\U000000F6\U000000F8-\U000001BA\U000001BC-\U000001BF\U000001C4-\U00000293\U00000295-\U000002AF\U00000370-\U00000373\U00000376\U00000377\U0000037B-\U0000037D\U0000037F\U00000386\U00000388-\U0000038A\U0000038C\U0000038E-\U000003A1\U000003A3-\U000003F5\U000003F7-\U00000481\U0000048A-\U0000052F\U00000531-\U00000556\U000010A0-\U000010C5\U000013A0-\U000013F5\U000013F8-\U000013FD\U00001C90-\U00001CBA\U00001CBD-\U00001CBF\U00001D00-\U00001D2B\U00001D6B-\U00001D77\U00001D79-\U00001D9A\U00001E00-\U00001F15\U00001F18-\U00001F1D\U00001F20-\U00001F45\U00001F48-\U00001F4D\U00001F50-\U00001F57\U00001F59\U00001F5B\U00001F5D\U00001F5F-\U00001F7D\U00001F80-\U00001FB4\U00001FB6-\U00001FBC\U00001FBE\U00001FC2-\U00001FC4\U00001FC6-\U00001FCC\U00001FD0-\U00001FD3\U00001FD6-\U00001FDB\U00001FE0-\U00001FEC\U00001FF2-\U00001FF4\U00001FF6-\U00001FFC\U00002102\U00002107\U0000210A-\U00002113\U00002115\U00002119-\U0000211D\U00002124\U00002126\U00002128\U0000212A-\U0000212D\U0000212F-\U00002134\U00002139\U0000213C-\U0000213F\U00002145-\U00002149\U0000214E\U00002183\U00002184\U00002C00-\U00002C7B\U00002C7E-\U00002CE4\U00002CEB-\U00002CEE\U00002CF2\U00002CF3\U0000A640-\U0000A66D\U0000A680-\U0000A69B\U0000A722-\U0000A76F\U0000A771-\U0000A787\U0000A78B-\U0000A78E\U0000AB70-\U0000ABBF\U0000FB00-\U0000FB06\U0000FB13-\U0000FB17\U0000FF21-\U0000FF3A\U0000FF41-\U0000FF5A\U00010400-\U0001044F\U000104B0-\U000104D3\U000104D8-\U000104FB\U00010C80-\U00010CB2\U00010CC0-\U00010CF2\U000118A0-\U000118DF\U0001E900-\U0001E943]+", r"\s?[!-/:-~\U0000FF01-\U0000FF0F\U0000FF1A-\U0000FF5E\U00002018-\U0000201F\U00003000-\U00003002]+", r"\s+$", "[\u4e00-\u9fa5\u0800-\u4e00\uac00-\ud7ff]+", r"\p{N}+"],
  "deepseek-v3": [r"\p{N}{1,3}", "[\u4e00-\u9fa5\u3040-\u309f\u30a0-\u30ff]+",
                  r"""[!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""],
  "tekken": [r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+"],
  "gpt-4o": [r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+"],
}

def compile_ws(p):
    # \s / \S as Unicode White_Space (what Oniguruma means), not Python's isspace.
    out = ""
    i = 0
    in_class = False
    while i < len(p):
        c = p[i]
        if c == "\\" and i + 1 < len(p):
            n = p[i + 1]
            if n == "s":
                out += WS if in_class else "[" + WS + "]"
                i += 2; continue
            if n == "S":
                if in_class: raise ValueError("\\S in class")
                out += "[^" + WS + "]"
                i += 2; continue
            out += p[i:i + 2]; i += 2; continue
        if c == "[" and not in_class: in_class = True
        elif c == "]" and in_class: in_class = False
        out += c; i += 1
    return regex.compile(out, flags=regex.V0)

def split(text, pats):
    pieces = [text] if text else []
    for p in pats:
        r = compile_ws(p)
        nxt = []
        for piece in pieces:
            last = 0
            for m in r.finditer(piece):
                if m.end() == m.start(): continue
                if m.start() > last: nxt.append(piece[last:m.start()])
                nxt.append(m.group()); last = m.end()
            if last < len(piece): nxt.append(piece[last:])
        pieces = nxt
    return pieces

def bytes_to_unicode():
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]; n = 0
    for b in range(256):
        if b not in bs: bs.append(b); cs.append(256 + n); n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}
B2U = bytes_to_unicode()

def bpe(word, ranks):
    w = list(word)
    while len(w) > 1:
        pairs = [(ranks.get((w[i], w[i + 1]), 1 << 60), i) for i in range(len(w) - 1)]
        r, _ = min(pairs)
        if r == 1 << 60: break
        a, b = None, None
        for (rk, i) in pairs:
            if rk == r: a, b = w[i], w[i + 1]; break
        out = []; i = 0
        while i < len(w):
            if i < len(w) - 1 and w[i] == a and w[i + 1] == b: out.append(a + b); i += 2
            else: out.append(w[i]); i += 1
        w = out
    return w

def tokenize(text, vocab, ranks, pats, ignore_merges):
    ids = []
    for piece in split(text, pats):
        word = "".join(B2U[b] for b in piece.encode("utf-8"))
        if ignore_merges and word in vocab: ids.append(vocab[word]); continue
        ids += [vocab[t] for t in bpe(word, ranks)]
    return ids

POOL = (["a", "e", "the", " the", "Hello", " World", "I", "x", "Z", "qu", "ing", "'s", "'S", "'ll", "'LL", "'re", "'Ve", "'d", "'M", "'t", "'", "''",
         " ", " ", "  ", "   ", "\t", "\n", "\n\n", "\r\n", "\r", "\x0b", "\x0c", "\x1c", "\x85", "\xa0", "\u2009", "\u3000", "\u200b", "\u2028",
         "0", "1", "12", "123", "1234", "12345", "3.14", "٣", "²", "½", "Ⅻ", "①",
         ".", ",", "!", "?", "...", "--", "-", "_", "(", ")", "[", "]", "{", "}", "<", ">", "=", "+", "$", "^", "~", "|", "`", "@", "#", "%", "&", "*", "/", "\\", ":", ";", '"',
         "é", "É", "ñ", "ß", "Ä", "ǅ", "ﬁ", "µ", "ſ", "K", "Ω", "ώ", "ΐ",
         "Привет", " мир", "Ελλάδα", "שלום", "مرحبا", "नमस्ते", "ไทย", "한국어", "日本語", "中文", "ひらがな", "カタカナ", "ｱ", "Ａｂ", "！", "，", "。", "、", "…", "“", "”", "‘",
         "e\u0301", "\u0301", "a\u20dd", "ক্ষ", "ি", "\u200d", "\ufe0f",
         "🦙", "😀", "👍🏽", "👨‍👩‍👧", "🏳️‍🌈", "🇫🇷", "✅", "©", "™", "€", "£", "∑", "√", "→", "♥",
         "CamelCase", "HTTPServer", "iPhone", "ABCdef", "xYz", "\u0130", "\u00df", "\U0001d400"])

def rand_text(rng):
    n = rng.randint(0, 14)
    return "".join(rng.choice(POOL) for _ in range(n))



def copy_with_pre(src, dst, pre):
    """The GGUF at src with tokenizer.ggml.pre set to pre (metadata-only files)."""
    d = open(src, "rb").read()
    pos = 4
    _, n_tensors, n_kv = struct.unpack_from("<IQQ", d, pos)
    pos += 20
    assert n_tensors == 0, "vocabulary-only files only"
    out = bytearray(d[:pos])
    sizes = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}

    def skip(t, p):
        if t == 8:
            return p + 8 + struct.unpack_from("<Q", d, p)[0]
        if t == 9:
            et, n = struct.unpack_from("<IQ", d, p)
            p += 12
            for _ in range(n):
                p = skip(et, p)
            return p
        return p + sizes[t]

    for _ in range(n_kv):
        start = pos
        n = struct.unpack_from("<Q", d, pos)[0]
        key = d[pos + 8:pos + 8 + n].decode()
        pos += 8 + n
        t = struct.unpack_from("<I", d, pos)[0]
        pos += 4
        end = skip(t, pos)
        if key == "tokenizer.ggml.pre":
            b = pre.encode()
            out += d[start:pos] + struct.pack("<Q", len(b)) + b
        else:
            out += d[start:end]
        pos = end
    out += d[pos:]
    open(dst, "wb").write(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("gguf")
    ap.add_argument("outdir")
    ap.add_argument("--pre", help="pre-tokenizer to check (default: the file's)")
    ap.add_argument("--count", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    kv = read_vocab(a.gguf)
    pre = a.pre or kv.get("tokenizer.ggml.pre", "default")
    vocab = {}
    for i, t in enumerate(kv["tokenizer.ggml.tokens"]):
        vocab.setdefault(t, i)
    ranks = {}
    for i, m in enumerate(kv["tokenizer.ggml.merges"]):
        sep = m.index(" ", 1)
        ranks.setdefault((m[:sep], m[sep + 1:]), i)
    rng = random.Random(a.seed)
    texts = [rand_text(rng) for _ in range(a.count)]
    os.makedirs(os.path.join(a.outdir, "vocab"), exist_ok=True)
    dst = os.path.join(a.outdir, "vocab", os.path.basename(a.gguf))
    if os.path.lexists(dst):
        os.remove(dst)
    if pre == kv.get("tokenizer.ggml.pre"):
        os.symlink(os.path.abspath(a.gguf), dst)
    else:
        copy_with_pre(a.gguf, dst, pre)
    with open(dst + ".inp", "w", encoding="utf-8", newline="") as f:
        for t in texts:
            f.write(t + "\n__ggml_vocab_test__\n")
    with open(dst + ".out", "w") as f:
        for t in texts:
            ids = tokenize(t, vocab, ranks, PATS[pre], pre in ("llama-bpe", "tekken"))
            f.write("".join(" %d" % i for i in ids) + "\n")
    print("%s: %d strings, pre-tokenizer %s -> %s" % (a.gguf, a.count, pre, dst))


if __name__ == "__main__":
    main()
