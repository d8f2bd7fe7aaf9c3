#!/usr/bin/python3
"""Write a synthetic ReLU-FFN llama GGUF with controlled activation sparsity
and per-layer FFN predictors fitted on activations sampled from the model.

The model (random weights, a tokenizer borrowed from another GGUF):
  * llama attention as loom runs it (RMS norm, RoPE normal mode, causal
    softmax attention);
  * FFN h = relu(gate x) * (up x), down h, with
    llama.feed_forward_activation = "relu";
  * dimension 0 of the residual stream is a constant "bias channel" (every
    token embedding has c there; no layer writes it), so gate row j's
    weight on it acts as a per-neuron bias b_j. Layer by layer, on a sample
    of token sequences run through the model itself, b_j is set so that
    neuron j fires for a share f_j of the tokens, f_j drawn log-normal with
    mean 1 - SPARSITY: a minority of neurons is hot, most are cold;
  * the gate matrix is low rank (RANK_TRUE) plus noise, as the predictors
    of real ReLU models find it (most of the decision lives in few
    directions).

The predictors (loom's naming, llm/sparse/sparse_ffn.hpp): z = P2 relu(P1 x) + b
with P1 [2r, n_embd], P2 [n_ff, 2r]: the rank-r least-squares map from
sampled FFN inputs x to the gate pre-activations (split into its positive
and negative parts, so the ReLU hidden layer passes it exactly), then a
per-neuron logistic regression (scale and bias, Newton steps) on the
sampled labels gate > 0. The threshold p (llama.sparse.threshold) is the
largest whose recall on the sample reaches --recall; recall and precision
are then reported per layer on held-out sequences.

Also written: blk.N.ffn_down_t.weight, the down projection neuron-major,
for loom's column-sparse (AXPY) product. Numpy only (Debian's
python3-numpy). Usage:
  make_sparse_gguf.py OUT.gguf --tokenizer-from stories260K.gguf \
      [--dim 64 --layers 2 --heads 4 --ffn 512 --sparsity 0.9 --rank 16 \
       --type f32|f16|q8_0|q4_0 --pred-type f32|f16|q8_0|q4_0 --seed 0 --recall 0.99]
Prints one line per layer (sparsity, predicted share, recall, precision) and
a summary; --json FILE writes the same as JSON.
"""
import argparse
import json
import math
import sys

import numpy as np

# GGUF writing: tools/gguf_writer.py (shared with make_arch_gguf.py).
from gguf_writer import TYPE_IDS, decode_roundtrip, read_gguf_kv, write_gguf  # noqa: E402

# ------------------------------------------------------------ the model in numpy


def rms_norm(x, eps=1e-5):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps)


def rope(x, pos, base=10000.0):
    """x [T, H, hd], loom's normal mode: pairs (2i, 2i + 1)."""
    hd = x.shape[-1]
    inv = base ** (-np.arange(0, hd, 2, dtype=np.float64) / hd)
    th = pos[:, None].astype(np.float64) * inv[None, :]
    c = np.cos(th)[:, None, :].astype(np.float32)
    s = np.sin(th)[:, None, :].astype(np.float32)
    x0, x1 = x[..., 0::2], x[..., 1::2]
    out = np.empty_like(x)
    out[..., 0::2] = x0 * c - x1 * s
    out[..., 1::2] = x0 * s + x1 * c
    return out


def attention(h, L, n_head, n_kv):
    """h [S, T, d] (S sequences of T tokens) -> attention output [S, T, d]."""
    S, T, d = h.shape
    hd = d // n_head
    pos = np.arange(T)
    q = (h @ L['wq'].T).reshape(S, T, n_head, hd)
    k = (h @ L['wk'].T).reshape(S, T, n_kv, hd)
    v = (h @ L['wv'].T).reshape(S, T, n_kv, hd)
    out = np.empty((S, T, n_head, hd), np.float32)
    mask = np.triu(np.full((T, T), -np.inf, np.float32), 1)
    rep = n_head // n_kv
    for s in range(S):
        qs = rope(q[s], pos)
        ks = rope(k[s], pos)
        for hh in range(n_head):
            g = hh // rep
            sc = qs[:, hh, :] @ ks[:, g, :].T / np.sqrt(hd) + mask
            sc = np.exp(sc - sc.max(axis=1, keepdims=True))
            sc /= sc.sum(axis=1, keepdims=True)
            out[s, :, hh, :] = sc @ v[s][:, g, :]
    return out.reshape(S, T, d) @ L['wo'].T


def ffn_dense(h, L):
    g = h @ L['gate'].T
    return (np.maximum(g, 0) * (h @ L['up'].T)) @ L['down'].T, g


def forward_layers(model, tokens, collect=None):
    """Runs the model over tokens [S, T]; collect(l, ffn_input, gate_preact)."""
    x = model['emb'][tokens]
    for li, L in enumerate(model['layers']):
        x = x + attention(rms_norm(x), L, model['n_head'], model['n_kv'])
        h = rms_norm(x)
        y, g = ffn_dense(h, L)
        if collect:
            collect(li, h.reshape(-1, h.shape[-1]), g.reshape(-1, g.shape[-1]))
        x = x + y
    return x

# ------------------------------------------------------------ construction


def make_layer(rng, d, n_ff, n_head, n_kv, rank_true, noise, wtype):
    hd = d // n_head
    sd = 1.0 / np.sqrt(d)
    L = {
        'wq': rng.standard_normal((d, d), dtype=np.float32) * sd,
        'wk': rng.standard_normal((n_kv * hd, d), dtype=np.float32) * sd,
        'wv': rng.standard_normal((n_kv * hd, d), dtype=np.float32) * sd,
        'wo': rng.standard_normal((d, d), dtype=np.float32) * sd * 0.5,
        'up': rng.standard_normal((n_ff, d), dtype=np.float32) * sd,
    }
    a = rng.standard_normal((n_ff, rank_true), dtype=np.float32)
    b = rng.standard_normal((rank_true, d), dtype=np.float32) / np.sqrt(rank_true * d)
    gate = a @ b + noise * rng.standard_normal((n_ff, d), dtype=np.float32) * sd
    gate[:, 0] = 0.0  # the bias weight, set by calibrate()
    L['gate'] = gate
    L['wo'][0, :] = 0.0  # nothing writes the bias channel
    L['down'] = np.zeros((d, n_ff), np.float32)  # set by calibrate()
    for k in ('wq', 'wk', 'wv', 'wo', 'up'):
        L[k] = decode_roundtrip(L[k], wtype)
    return L


def target_frequencies(rng, n_ff, active, sigma):
    """Per-neuron firing shares, log-normal, mean `active`."""
    f = np.exp(sigma * rng.standard_normal(n_ff))
    f = f / f.mean() * active
    for _ in range(20):  # clip and renormalise towards the mean
        f = np.clip(f, 0.002, 0.9)
        f = f / f.mean() * active
    return np.clip(f, 0.001, 0.95)


def calibrate(rng, L, h, f, wtype):
    """Sets gate's bias column so neuron j fires for a share f_j of h's rows,
    and the down projection; h are this layer's sampled FFN inputs."""
    n_ff, d = L['gate'].shape
    pre = h @ L['gate'].T
    srt = np.sort(pre, axis=0)
    idx = np.clip(np.round((1.0 - f) * (len(h) - 1)).astype(int), 0, len(h) - 1)
    thr = srt[idx, np.arange(n_ff)]
    h0 = float(np.mean(h[:, 0]))
    L['gate'][:, 0] = -thr / h0
    L['gate'] = decode_roundtrip(L['gate'], wtype)
    down = rng.standard_normal((d, n_ff), dtype=np.float32) / np.sqrt(max(1.0, n_ff * f.mean()))
    down[0, :] = 0.0
    L['down'] = decode_roundtrip(down, wtype)

# ------------------------------------------------------------ predictors


def fit_predictor(x, g, rank, newton_steps=8):
    """x [N, d] FFN inputs, g [N, n_ff] gate pre-activations -> (P1 [2r, d],
    P2 [n_ff, 2r], bias [n_ff]) with z = P2 relu(P1 x) + bias."""
    n, d = x.shape
    xa = np.concatenate([x, np.ones((n, 1), np.float32)], axis=1).astype(np.float64)
    m, *_ = np.linalg.lstsq(xa, g.astype(np.float64), rcond=None)  # [d + 1, n_ff]
    w, c = m[:d], m[d]
    u, s, vt = np.linalg.svd(w, full_matrices=False)
    r = min(rank, len(s))
    left = u[:, :r] * np.sqrt(s[:r])           # [d, r]
    right = (vt[:r].T * np.sqrt(s[:r]))        # [n_ff, r]
    zlin = x.astype(np.float64) @ left @ right.T + c  # what the ReLU pair passes exactly
    # Per-neuron logistic regression z = a * zlin + b on the labels (Newton).
    y = (g > 0).astype(np.float64)
    sd = zlin.std(axis=0) + 1e-9
    t = zlin / sd
    a = np.ones(g.shape[1])
    b = np.zeros(g.shape[1])
    for _ in range(newton_steps):
        z = np.clip(a * t + b, -30, 30)
        p = 1.0 / (1.0 + np.exp(-z))
        e = p - y
        wgt = p * (1 - p) + 1e-6
        ga, gb = (e * t).mean(0), e.mean(0)
        haa, hab, hbb = (wgt * t * t).mean(0) + 1e-4, (wgt * t).mean(0), wgt.mean(0) + 1e-4
        det = haa * hbb - hab * hab
        a -= (hbb * ga - hab * gb) / det
        b -= (haa * gb - hab * ga) / det
    scale = a / sd
    p1 = np.concatenate([left.T, -left.T], axis=0).astype(np.float32)                # [2r, d]
    p2 = np.concatenate([right * scale[:, None], -right * scale[:, None]], axis=1)  # [n_ff, 2r]
    bias = (c * scale + b).astype(np.float32)
    return p1, p2.astype(np.float32), bias


def predict(p, x):
    p1, p2, bias = p
    return np.maximum(x @ p1.T, 0) @ p2.T + bias


def choose_threshold(zs, ys, recall):
    """The largest logit threshold whose recall over all layers' samples is
    at least `recall` (every layer counted)."""
    lo, hi = -30.0, 30.0
    for _ in range(60):
        mid = (lo + hi) / 2
        ok = all(((z > mid) & y).sum() >= recall * max(1, y.sum()) for z, y in zip(zs, ys))
        lo, hi = (mid, hi) if ok else (lo, mid)
    return lo


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('out')
    ap.add_argument('--tokenizer-from', required=True)
    ap.add_argument('--dim', type=int, default=64)
    ap.add_argument('--layers', type=int, default=2)
    ap.add_argument('--heads', type=int, default=4)
    ap.add_argument('--kv-heads', type=int, default=None)
    ap.add_argument('--ffn', type=int, default=512)
    ap.add_argument('--sparsity', type=float, default=0.9, help='mean share of inactive neurons per token')
    ap.add_argument('--skew', type=float, default=1.0, help='log-normal sigma of the per-neuron firing shares')
    ap.add_argument('--rank-true', type=int, default=None, help='rank of the gate matrices (default dim/4)')
    ap.add_argument('--noise', type=float, default=0.05, help='full-rank noise of the gate matrices')
    ap.add_argument('--rank', type=int, default=None, help='predictor rank r (hidden 2r; default rank-true)')
    ap.add_argument('--recall', type=float, default=0.99, help='predictor recall the threshold is chosen for')
    ap.add_argument('--type', default='f32', choices=sorted(TYPE_IDS))
    ap.add_argument('--pred-type', default='f32', choices=sorted(TYPE_IDS),
                    help='weight type of the predictor matrices (q8_0 / q4_0 need --dim and 2 x rank multiples of 32)')
    ap.add_argument('--samples', type=int, default=48, help='sampled sequences (of --seq tokens) to fit on')
    ap.add_argument('--seq', type=int, default=32)
    ap.add_argument('--no-predictors', action='store_true', help='write the ReLU model without predictors')
    ap.add_argument('--seed', type=int, default=0)
    ap.add_argument('--json', default=None)
    ap.add_argument('--reference-tokens', default=None,
                    help='comma-separated token ids: write the dense model\'s logits for them (numpy, f32 [T, vocab]) '
                         'to --reference-logits, to check a runtime against')
    ap.add_argument('--reference-logits', default=None)
    a = ap.parse_args()
    if not 0.0 < a.sparsity < 1.0:
        raise SystemExit('--sparsity must be in (0, 1)')
    d, n_ff = a.dim, a.ffn
    n_kv = a.kv_heads or a.heads
    if d % a.heads or a.heads % n_kv or (d // a.heads) % 2:
        raise SystemExit('--dim must split into --heads heads of even size, --heads a multiple of --kv-heads')
    wtype = TYPE_IDS[a.type]
    if wtype in (2, 8) and (d % 32 or n_ff % 32):
        raise SystemExit(f'--type {a.type} needs --dim and --ffn multiples of 32')
    rank_true = a.rank_true or max(2, d // 4)
    rank = a.rank or rank_true
    ptype = TYPE_IDS[a.pred_type]
    if ptype in (2, 8) and (d % 32 or (2 * rank) % 32):
        raise SystemExit(f'--pred-type {a.pred_type} needs --dim and 2 x --rank multiples of 32')

    kvsrc = read_gguf_kv(a.tokenizer_from)
    vocab = len(kvsrc['tokenizer.ggml.tokens'])
    rng = np.random.default_rng(a.seed)
    emb = rng.standard_normal((vocab, d), dtype=np.float32) * 0.5
    emb[:, 0] = 2.0  # the bias channel
    emb = decode_roundtrip(emb, wtype)
    model = {'emb': emb, 'n_head': a.heads, 'n_kv': n_kv, 'layers': []}
    fit_tokens = rng.integers(3, vocab, size=(a.samples, a.seq))
    test_tokens = rng.integers(3, vocab, size=(max(8, a.samples // 4), a.seq))

    # Layer by layer: calibrate on the sample run through the layers so far.
    x = model['emb'][fit_tokens]
    for li in range(a.layers):
        L = make_layer(rng, d, n_ff, a.heads, n_kv, rank_true, a.noise, wtype)
        x = x + attention(rms_norm(x), L, a.heads, n_kv)
        h = rms_norm(x).reshape(-1, d)
        calibrate(rng, L, h, target_frequencies(rng, n_ff, 1.0 - a.sparsity, a.skew), wtype)
        model['layers'].append(L)
        x = x + ffn_dense(rms_norm(x), L)[0]
    output = decode_roundtrip(rng.standard_normal((vocab, d), dtype=np.float32) / np.sqrt(d), wtype)

    # Predictors fitted on the model's own activations; measured on others.
    fit = {}
    forward_layers(model, fit_tokens, lambda li, h, g: fit.__setitem__(li, (h, g)))
    test = {}
    forward_layers(model, test_tokens, lambda li, h, g: test.__setitem__(li, (h, g)))
    preds, report = [], []
    if not a.no_predictors:
        preds = [fit_predictor(*fit[li], rank) for li in range(a.layers)]
        # The matrices as loom will read them (threshold and recall measured on those).
        preds = [(decode_roundtrip(p1, ptype), decode_roundtrip(p2, ptype), b) for p1, p2, b in preds]
        zs = [predict(preds[li], fit[li][0]) for li in range(a.layers)]
        thr = choose_threshold(zs, [fit[li][1] > 0 for li in range(a.layers)], a.recall)
    for li in range(a.layers):
        h, g = test[li]
        y = g > 0
        row = {'layer': li, 'sparsity': float(1.0 - y.mean()),
               'hot20_share': float(np.sort(y.mean(0))[::-1][:max(1, n_ff // 5)].sum() / max(1e-9, y.mean(0).sum()))}
        if preds:
            pz = predict(preds[li], h) > thr
            tp = float((pz & y).sum())
            row.update({'predicted_share': float(pz.mean()), 'recall': tp / max(1.0, float(y.sum())),
                        'precision': tp / max(1.0, float(pz.sum()))})
        report.append(row)

    prefix = 'llama.'
    kv = {
        'general.architecture': 'llama', 'general.name': f'sparse-synth-{d}x{a.layers}',
        prefix + 'context_length': 2048, prefix + 'embedding_length': d,
        prefix + 'feed_forward_length': n_ff, prefix + 'attention.head_count': a.heads,
        prefix + 'attention.head_count_kv': n_kv, prefix + 'block_count': a.layers,
        prefix + 'rope.dimension_count': d // a.heads, prefix + 'attention.layer_norm_rms_epsilon': 1e-5,
        prefix + 'feed_forward_activation': 'relu',
        'tokenizer.ggml.model': 'llama',
        'tokenizer.ggml.tokens': kvsrc['tokenizer.ggml.tokens'],
        'tokenizer.ggml.scores': [float(x) for x in kvsrc['tokenizer.ggml.scores']],
        'tokenizer.ggml.token_type': [int(x) for x in kvsrc['tokenizer.ggml.token_type']],
        'tokenizer.ggml.bos_token_id': 1, 'tokenizer.ggml.eos_token_id': 2,
        'tokenizer.ggml.unknown_token_id': 0,
    }
    if preds:
        kv[prefix + 'sparse.threshold'] = float(1.0 / (1.0 + math.exp(-thr)))
    ones = np.ones(d, np.float32)
    tensors = [('token_embd.weight', model['emb'], wtype), ('output_norm.weight', ones, 0),
               ('output.weight', output, wtype)]
    for li, L in enumerate(model['layers']):
        p = f'blk.{li}.'
        tensors += [(p + 'attn_norm.weight', ones, 0), (p + 'attn_q.weight', L['wq'], wtype),
                    (p + 'attn_k.weight', L['wk'], wtype), (p + 'attn_v.weight', L['wv'], wtype),
                    (p + 'attn_output.weight', L['wo'], wtype), (p + 'ffn_norm.weight', ones, 0),
                    (p + 'ffn_gate.weight', L['gate'], wtype), (p + 'ffn_up.weight', L['up'], wtype),
                    (p + 'ffn_down.weight', L['down'], wtype)]
        if preds:
            p1, p2, bias = preds[li]
            # Each neuron's firing share on the fitting sample: the frequency
            # profile hot/cold placement ranks neurons by.
            freq = (fit[li][1] > 0).mean(axis=0).astype(np.float32)
            tensors += [(p + 'ffn_pred_in.weight', p1, ptype), (p + 'ffn_pred_out.weight', p2, ptype),
                        (p + 'ffn_pred_out.bias', bias, 0), (p + 'ffn_freq', freq, 0),
                        (p + 'ffn_down_t.weight', np.ascontiguousarray(L['down'].T), wtype)]
    nbytes = write_gguf(a.out, kv, tensors)

    if a.reference_tokens and a.reference_logits:
        toks = np.array([[int(t) for t in a.reference_tokens.split(',')]])
        xo = forward_layers(model, toks)[0]
        (rms_norm(xo) @ output.T).astype(np.float32).tofile(a.reference_logits)
    for r in report:
        line = f"layer {r['layer']}: sparsity {r['sparsity']:.3f} (hot 20% of neurons: {r['hot20_share']:.2f} of firings)"
        if preds:
            line += (f", predicted {r['predicted_share']:.3f} of neurons, recall {r['recall']:.4f},"
                     f" precision {r['precision']:.3f}")
        print(line)
    summary = {'out': a.out, 'bytes': nbytes, 'dim': d, 'ffn': n_ff, 'layers': a.layers, 'type': a.type,
               'threshold': kv.get(prefix + 'sparse.threshold'), 'layers_report': report}
    print(f"{a.out}: {nbytes / 1e6:.2f} MB of tensors, {a.layers} layers, dim {d}, ffn {n_ff}, type {a.type}"
          + (f", threshold p = {summary['threshold']:.4f}" if preds else ', no predictors'))
    if a.json:
        with open(a.json, 'w') as f:
            json.dump(summary, f, indent=1)


if __name__ == '__main__':
    sys.exit(main())
