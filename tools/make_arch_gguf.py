#!/usr/bin/python3
"""Write a random-weight GGUF of any architecture, with the tensor names and
metadata keys that real converted files use (llama.cpp's naming), so every
architecture can be run at any size and compared with other runtimes. The
text such a model produces is noise; the shapes, names and keys are real.

Architectures (--arch):
  llama     llama / llama-2 / llama-3 layout (--rope-freqs adds rope_freqs.weight)
  mixtral   a llama file with llama.expert_count / expert_used_count and the
            experts stacked in blk.N.ffn_{gate,up,down}_exps (Mixtral style)
  qwen2     Q/K/V biases, NEOX RoPE, tied output
  qwen3     per-head Q/K RMS norms, NEOX RoPE
  qwen3moe  qwen3 with experts (expert_feed_forward_length, top-k normalised)
  qwen2moe  qwen2 with experts (top-k weights as they are) and a shared expert
            (blk.N.ffn_*_shexp, expert_shared_feed_forward_length)
  olmoe     OLMoE: experts (top-k weights as they are), Q/K norms over the
            whole projection
  phi3      fused blk.N.attn_qkv and blk.N.ffn_up (gate rows, then up rows)
  gemma2    post-attention / post-FFN norms, GELU-gated FFN, soft-capping,
            sliding window on alternate layers, tied output
  gemma3    gemma2 without soft-capping, with Q/K norms and every 6th layer global
  gemma     the first Gemma: embedding scale and GELU-gated FFN, no post-norms
  smollm3   llama with every 4th layer unrotated (NoPE; no key says so)
  granite   llama with granite.{embedding,residual,logit}_scale and attention.scale
  granitemoe  granite with experts (as mixtral's, granitemoe.expert_count)
  minicpm   MiniCPM: granite's multipliers, keys left out (the defaults apply)
  olmo2     no input norms, post-norms, Q/K norms over the whole projection
  qwen2vl   Qwen2-VL's text model: qwen2 with rope.dimension_sections (M-RoPE)
  qwen3vl, qwen3vlmoe  Qwen3-VL's text model: qwen3 / qwen3moe with interleaved
            M-RoPE sections
  exaone    llama's layout (EXAONE 3 / 3.5; neox RoPE in loom's table)
  exaone4   EXAONE 4.0: no input norms, post-norms, per-head Q/K norms (a
            64-layer file gets the 32B's sliding windows)
  ernie4_5  llama's layout (ERNIE 4.5's dense models), tied output
  internlm2 llama's layout (InternLM2 / 2.5)
  command-r LayerNorms, attention and FFN in parallel (no ffn_norm), logit_scale
  cohere2   Command R7B: command-r with a sliding window on 3 of every 4 layers,
            RoPE on those only
  glm4      GLM-4 (0414): post-norms after both blocks, fused attn_qkv (with
            its bias) and ffn_up (gate rows, then up rows), half of each head rotated
  gpt2      LayerNorms with biases, fused blk.N.attn_qkv with its bias, learned
            positions (position_embd.weight, no RoPE), GELU FFN without a gate,
            biases on every projection, tied output
  gptneox   GPT-NeoX / Pythia: gpt2's layout with partial NEOX RoPE instead of
            positions, parallel layers (use_parallel_residual), untied output
  phi2      Phi-2: separate Q/K/V with biases, partial RoPE, one norm feeding
            the attention and the FFN in parallel (no ffn_norm), output.bias
  starcoder2  StarCoder 2: LayerNorms with biases, Q/K/V biases, GELU FFN with
            biases, tied output
  stablelm  StableLM 2: LayerNorms with biases, Q/K/V biases, partial RoPE,
            a SwiGLU FFN
  bloom     BLOOM: gpt2's layout with ALiBi instead of positions and a
            LayerNorm of the embeddings (token_embd_norm)
  mpt       MPT: fused Q/K/V, ALiBi (attention.max_alibi_bias), GELU FFN, no biases
  starcoder StarCoder 1: gpt2's layout with multi-query attention (one K/V head)
  olmo      OLMo 1: llama's layout with LayerNorms without weights (no norm tensors)
  nemotron  Nemotron: LayerNorms with biases, partial RoPE, ReLU^2 FFN without a gate
  arcee     Arcee AFM: llama's layout with a ReLU^2 FFN without a gate
  seed_oss  Seed-OSS: llama's layout with Q/K/V biases, the FFN norm named
            post_attention_norm
  baichuan  llama's layout; --layers 32 (the 7B: RoPE) or 40 (the 13B: ALiBi)
  falcon    Falcon 40B: fused multi-query Q/K/V (one K/V head whatever --kv-heads
            says), attention from attn_norm_2 and FFN from attn_norm side by side

loom runs every one of them.

Needs numpy (Debian's python3-numpy). Usage:
  make_arch_gguf.py --arch NAME --tokenizer-from GGUF [--type f32|f16|q8_0|q4_0]
      [--seed N] [--dim N] [--layers N] [--heads N] [--kv-heads N] [--head-dim N]
      [--ffn N] [--ctx N] [--experts N] [--experts-used N] [--expert-ffn N]
      [--rope-freqs] [--rope-scaling linear|yarn [--rope-factor F] [--rope-orig-ctx N]]
      [--longrope [--rope-orig-ctx N]] OUT
"""
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gguf_writer import TYPE_IDS, read_gguf_kv, write_gguf  # noqa: E402

ARCHS = ('llama', 'mixtral', 'qwen2', 'qwen3', 'qwen3moe', 'qwen2moe', 'olmoe', 'phi3', 'gemma2', 'gemma3', 'gemma', 'smollm3', 'granite',
         'granitemoe', 'olmo2', 'qwen2vl', 'exaone', 'ernie4_5',
         'command-r', 'cohere2', 'glm4', 'minicpm', 'internlm2', 'exaone4', 'gpt2', 'gptneox', 'phi2', 'starcoder2', 'stablelm', 'bloom', 'mpt', 'falcon', 'starcoder', 'olmo',
         'nemotron', 'arcee', 'seed_oss', 'baichuan', 'qwen3vl', 'qwen3vlmoe')
# The GPT family: LayerNorms with biases (and stablelm, whose FFN is gated).
GPT = ('gpt2', 'gptneox', 'phi2', 'starcoder2', 'stablelm', 'bloom', 'mpt', 'falcon', 'starcoder', 'nemotron')
# Their FFN without a gate: down(gelu(up x + b)) + b.
FFN_SEQ = ('gpt2', 'gptneox', 'phi2', 'starcoder2', 'bloom', 'mpt', 'falcon', 'starcoder', 'nemotron', 'arcee')
# The file's general.architecture (Mixtral files say llama).
FILE_ARCH = {'mixtral': 'llama'}


def tokenizer_keys(path):
    """The tokenizer.* keys of another GGUF (the vocabulary the model gets)."""
    kv = read_gguf_kv(path)
    tok = {k: v for k, v in kv.items() if k.startswith('tokenizer.')}
    if 'tokenizer.ggml.tokens' not in tok:
        raise SystemExit(f'{path}: no tokenizer (tokenizer.ggml.tokens) to borrow')
    return tok


class Maker:
    def __init__(self, a):
        self.a = a
        self.rng = np.random.default_rng(a.seed)
        self.tensors = []
        self.wtype = TYPE_IDS[a.type]

    def matrix(self, name, rows, cols, scale=1.0):
        """A weight [rows x cols] (ggml ne = [cols, rows]) in the chosen type;
        quantized types need cols % 32 == 0, else it is written as f16."""
        w = (self.rng.standard_normal((rows, cols)) * (scale / np.sqrt(cols))).astype(np.float32)
        ty = self.wtype if cols % 32 == 0 or self.wtype in (0, 1) else 1
        self.tensors.append((name, w, ty))

    def experts(self, name, n_expert, rows, cols):
        """n_expert matrices [rows x cols] stacked (ne = [cols, rows, n_expert])."""
        w = (self.rng.standard_normal((n_expert, rows, cols)) / np.sqrt(cols)).astype(np.float32)
        ty = self.wtype if cols % 32 == 0 or self.wtype in (0, 1) else 1
        self.tensors.append((name, w, ty))

    def vector(self, name, n, value=1.0, noise=0.1):
        v = (value + noise * self.rng.standard_normal(n)).astype(np.float32)
        self.tensors.append((name, v, 0))

    def bias(self, name, n):
        self.tensors.append((name, (0.1 * self.rng.standard_normal(n)).astype(np.float32), 0))


def kv_heads(a):
    """K/V heads as the file has them: Falcon's attention is multi-query."""
    return 1 if a.arch in ('falcon', 'starcoder') else a.kv_heads


def build(a, n_vocab):
    m = Maker(a)
    arch = a.arch
    d, hd = a.dim, a.head_dim or a.dim // a.heads
    qd, kvd = hd * a.heads, hd * kv_heads(a)
    moe = arch in ('mixtral', 'qwen3moe', 'granitemoe', 'qwen2moe', 'olmoe', 'qwen3vlmoe')
    post_norms = arch in ('gemma2', 'gemma3', 'olmo2', 'glm4', 'exaone4')
    tied = arch in ('qwen2', 'qwen2vl', 'ernie4_5', 'command-r', 'cohere2', 'gemma', 'gemma2', 'gemma3', 'smollm3', 'granite',
                    'granitemoe', 'minicpm', 'gpt2', 'starcoder2', 'bloom', 'mpt', 'starcoder')
    gpt = arch in GPT
    bias = gpt and arch != 'mpt'  # (MPT has none; Falcon and Nemotron only on their norms)
    proj_bias = bias and arch not in ('falcon', 'nemotron')
    norms = arch != 'olmo'  # (OLMo 1's LayerNorms have no weights)
    m.matrix('token_embd.weight', n_vocab, d, scale=4.0)
    if arch in ('gpt2', 'starcoder'):
        m.matrix('position_embd.weight', a.ctx, d)
    if arch == 'bloom':
        m.vector('token_embd_norm.weight', d)
        m.bias('token_embd_norm.bias', d)
    if norms:
        m.vector('output_norm.weight', d)
    if bias:
        m.bias('output_norm.bias', d)
    if not tied:
        m.matrix('output.weight', n_vocab, d)
    if arch == 'phi2':
        m.bias('output.bias', n_vocab)
    if arch == 'llama' and a.rope_freqs:
        m.tensors.append(('rope_freqs.weight', np.linspace(1.0, 8.0, hd // 2).astype(np.float32), 0))
    if arch == 'phi3' and a.longrope:
        # LongRoPE's divisors, the long ones larger (as in Phi-3's 128k files).
        m.tensors.append(('rope_factors_long.weight', np.linspace(1.0, 40.0, hd // 2).astype(np.float32), 0))
        m.tensors.append(('rope_factors_short.weight', np.linspace(1.0, 1.5, hd // 2).astype(np.float32), 0))
    for il in range(a.layers):
        p = f'blk.{il}.'
        if arch not in ('olmo2', 'exaone4') and norms:
            m.vector(p + 'attn_norm.weight', d)
        if bias:
            m.bias(p + 'attn_norm.bias', d)
        if arch == 'falcon':
            m.vector(p + 'attn_norm_2.weight', d)
            m.bias(p + 'attn_norm_2.bias', d)
        if arch in ('phi3', 'gpt2', 'gptneox', 'glm4', 'bloom', 'mpt', 'falcon', 'starcoder'):
            m.matrix(p + 'attn_qkv.weight', qd + 2 * kvd, d)
            if arch not in ('phi3', 'mpt', 'falcon'):
                m.bias(p + 'attn_qkv.bias', qd + 2 * kvd)
        else:
            m.matrix(p + 'attn_q.weight', qd, d)
            m.matrix(p + 'attn_k.weight', kvd, d)
            m.matrix(p + 'attn_v.weight', kvd, d)
        m.matrix(p + 'attn_output.weight', d, qd)
        if arch in ('gpt2', 'gptneox', 'phi2', 'starcoder2', 'bloom', 'starcoder'):
            m.bias(p + 'attn_output.bias', d)
        if arch in ('qwen2', 'qwen2vl', 'qwen2moe', 'phi2', 'starcoder2', 'stablelm', 'seed_oss'):
            m.bias(p + 'attn_q.bias', qd)
            m.bias(p + 'attn_k.bias', kvd)
            m.bias(p + 'attn_v.bias', kvd)
        if arch in ('qwen3', 'qwen3moe', 'gemma3', 'exaone4', 'qwen3vl', 'qwen3vlmoe'):
            m.vector(p + 'attn_q_norm.weight', hd)
            m.vector(p + 'attn_k_norm.weight', hd)
        if arch in ('olmo2', 'olmoe'):
            m.vector(p + 'attn_q_norm.weight', qd)
            m.vector(p + 'attn_k_norm.weight', kvd)
        if post_norms:
            m.vector(p + 'post_attention_norm.weight', d)
        if arch not in ('olmo2', 'exaone4', 'command-r', 'cohere2', 'phi2', 'falcon') and norms:
            m.vector(p + ('post_attention_norm.weight' if arch == 'seed_oss' else 'ffn_norm.weight'), d)
            if bias:
                m.bias(p + 'ffn_norm.bias', d)
        if moe:
            n_ff = a.expert_ffn or a.ffn
            m.matrix(p + 'ffn_gate_inp.weight', a.experts, d)
            m.experts(p + 'ffn_gate_exps.weight', a.experts, n_ff, d)
            m.experts(p + 'ffn_up_exps.weight', a.experts, n_ff, d)
            m.experts(p + 'ffn_down_exps.weight', a.experts, d, n_ff)
            if arch == 'qwen2moe':
                m.tensors.append((p + 'ffn_gate_inp_shexp.weight',
                                  (m.rng.standard_normal(d) / np.sqrt(d)).astype(np.float32), 0))
                m.matrix(p + 'ffn_gate_shexp.weight', a.ffn, d)
                m.matrix(p + 'ffn_up_shexp.weight', a.ffn, d)
                m.matrix(p + 'ffn_down_shexp.weight', d, a.ffn)
        elif arch in ('phi3', 'glm4'):
            m.matrix(p + 'ffn_up.weight', 2 * a.ffn, d)
            m.matrix(p + 'ffn_down.weight', d, a.ffn)
        elif arch in FFN_SEQ:
            m.matrix(p + 'ffn_up.weight', a.ffn, d)
            m.matrix(p + 'ffn_down.weight', d, a.ffn)
            if proj_bias:
                m.bias(p + 'ffn_up.bias', a.ffn)
                m.bias(p + 'ffn_down.bias', d)
        else:
            m.matrix(p + 'ffn_gate.weight', a.ffn, d)
            m.matrix(p + 'ffn_up.weight', a.ffn, d)
            m.matrix(p + 'ffn_down.weight', d, a.ffn)
        if post_norms:
            m.vector(p + 'post_ffw_norm.weight', d)
    return m.tensors


def metadata(a, tok):
    fa = FILE_ARCH.get(a.arch, a.arch)
    hd = a.head_dim or a.dim // a.heads
    kv = {'general.architecture': fa, 'general.name': f'random {a.arch} (make_arch_gguf.py, seed {a.seed})'}
    k = lambda key, v: kv.__setitem__(f'{fa}.{key}', v)  # noqa: E731
    k('context_length', a.ctx)
    k('embedding_length', a.dim)
    k('block_count', a.layers)
    k('feed_forward_length', a.ffn)
    k('attention.head_count', a.heads)
    k('attention.head_count_kv', kv_heads(a))
    if a.head_dim:
        k('attention.key_length', hd)
        k('attention.value_length', hd)
    # Pythia, Phi-2 and StableLM rotate a part of each head (a quarter here).
    k('rope.dimension_count', max(2, hd // 8 * 2) if a.arch in ('gptneox', 'phi2', 'stablelm', 'nemotron')
      else hd // 2 if a.arch == 'glm4' else hd)
    if a.arch == 'gptneox':
        k('use_parallel_residual', True)
    if a.arch == 'mpt':
        k('attention.max_alibi_bias', 8.0)
    k('attention.layer_norm_epsilon' if a.arch in ('command-r', 'cohere2') or a.arch in GPT else 'attention.layer_norm_rms_epsilon', 1e-6 if a.arch.startswith(('qwen', 'gemma', 'smollm3', 'granite', 'olmo2')) else 1e-5)
    k('rope.freq_base', {'llama': 500000.0 if a.rope_freqs else 10000.0, 'qwen2': 1000000.0, 'qwen2moe': 1000000.0,
                         'qwen2vl': 1000000.0, 'qwen3': 1000000.0, 'qwen3moe': 1000000.0, 'gemma3': 1000000.0}.get(a.arch, 10000.0))
    if a.arch == 'phi3' and a.longrope:
        # Phi-3's converter writes no scaling type: the factor tensors, the
        # original context and the magnitude sqrt(1 + ln(ctx / orig) / ln(orig)).
        orig = a.rope_orig_ctx or max(1, a.ctx // 4)
        k('rope.scaling.original_context_length', orig)
        k('rope.scaling.attn_factor', float(np.sqrt(1.0 + np.log(a.ctx / orig) / np.log(orig))) if a.ctx > orig else 1.0)
    if a.rope_scaling:
        k('rope.scaling.type', a.rope_scaling)
        k('rope.scaling.factor', float(a.rope_factor))
        if a.rope_scaling == 'yarn':
            k('rope.scaling.original_context_length', a.rope_orig_ctx or max(1, a.ctx // 4))
    if a.arch in ('command-r', 'cohere2'):
        k('logit_scale', 0.0625)  # Command R's
    if a.arch == 'cohere2':
        k('attention.sliding_window', min(4096, a.ctx // 2))
    if a.arch in ('qwen3vl', 'qwen3vlmoe'):
        # Qwen3-VL's proportions ([24, 20, 20, 0] of 64 pairs), interleaved.
        hw = hd // 2 * 20 // 64
        k('rope.dimension_sections', [hd // 2 - 2 * hw, hw, hw, 0])
    if a.arch == 'qwen2vl':
        # Qwen2-VL's split of the rotated pairs: a quarter temporal, the rest height and width.
        t = hd // 8
        k('rope.dimension_sections', [t, (hd // 2 - t) // 2, hd // 2 - t - (hd // 2 - t) // 2, 0])
    if a.arch in ('granite', 'granitemoe'):
        # Granite 3's multipliers as its 2B file has them, the attention's
        # 1 / head dim as Granite's attention_multiplier is for 64-wide heads.
        k('embedding_scale', 12.0)
        k('residual_scale', 0.22)
        k('attention.scale', 1.0 / hd)
        k('logit_scale', 8.0)
    if a.arch in ('mixtral', 'qwen3moe', 'granitemoe', 'qwen2moe', 'olmoe', 'qwen3vlmoe'):
        k('expert_count', a.experts)
        k('expert_used_count', a.experts_used)
    if a.arch in ('qwen3moe', 'qwen2moe', 'qwen3vlmoe'):
        k('expert_feed_forward_length', a.expert_ffn or a.ffn)
    if a.arch == 'qwen2moe':
        k('expert_shared_feed_forward_length', a.ffn)
    if a.arch == 'gemma2':
        k('attention.sliding_window', min(4096, a.ctx // 2))
        k('attn_logit_softcapping', 50.0)
        k('final_logit_softcapping', 30.0)
    if a.arch == 'gemma3':
        k('attention.sliding_window', min(1024, a.ctx // 2))
    if a.arch == 'phi3':
        k('attention.sliding_window', a.ctx - 1)
    kv.update(tok)
    return kv


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('out')
    ap.add_argument('--arch', required=True, choices=ARCHS)
    ap.add_argument('--tokenizer-from', required=True, help='a GGUF whose tokenizer the model gets')
    ap.add_argument('--type', default='f32', choices=sorted(TYPE_IDS), help='weight type of the matrices')
    ap.add_argument('--seed', type=int, default=0)
    ap.add_argument('--dim', type=int, default=64)
    ap.add_argument('--layers', type=int, default=2)
    ap.add_argument('--heads', type=int, default=4)
    ap.add_argument('--kv-heads', type=int, default=2)
    ap.add_argument('--head-dim', type=int, default=0, help='0: dim / heads (no key_length key)')
    ap.add_argument('--ffn', type=int, default=128)
    ap.add_argument('--ctx', type=int, default=512)
    ap.add_argument('--experts', type=int, default=8, help='mixtral, qwen3moe, granitemoe, qwen2moe, olmoe')
    ap.add_argument('--experts-used', type=int, default=2, help='mixtral, qwen3moe, granitemoe, qwen2moe, olmoe')
    ap.add_argument('--expert-ffn', type=int, default=0, help='qwen3moe, qwen2moe: each expert\'s FFN (0: --ffn)')
    ap.add_argument('--rope-freqs', action='store_true', help='llama: llama-3\'s rope_freqs.weight')
    ap.add_argument('--rope-scaling', choices=('linear', 'yarn'), help='rope.scaling.type (default: no key)')
    ap.add_argument('--rope-factor', type=float, default=4.0, help='rope.scaling.factor with --rope-scaling')
    ap.add_argument('--rope-orig-ctx', type=int, default=0,
                    help='yarn, --longrope: rope.scaling.original_context_length (0: --ctx / 4)')
    ap.add_argument('--longrope', action='store_true',
                    help='phi3: a 128k file\'s LongRoPE (rope_factors_long / _short, rope.scaling.attn_factor)')
    a = ap.parse_args()
    for name in ('dim', 'layers', 'heads', 'kv_heads', 'ffn', 'ctx', 'experts', 'experts_used'):
        if getattr(a, name) < 1:
            ap.error(f'--{name.replace("_", "-")} must be >= 1')
    if a.heads % a.kv_heads:
        ap.error('--heads must be a multiple of --kv-heads')
    if not a.head_dim and a.dim % a.heads:
        ap.error('--dim must be a multiple of --heads (or give --head-dim)')
    if a.experts_used > a.experts:
        ap.error('--experts-used must be <= --experts')
    if a.arch == 'baichuan' and a.layers not in (32, 40):
        ap.error('baichuan: --layers 32 (the 7B, RoPE) or 40 (the 13B, ALiBi)')
    tok = tokenizer_keys(a.tokenizer_from)
    n_vocab = len(tok['tokenizer.ggml.tokens'])
    tensors = build(a, n_vocab)
    size = write_gguf(a.out, metadata(a, tok), tensors)
    print(f'{a.out}: {a.arch}, {a.layers} layers of {a.dim}, {len(tensors)} tensors, {size / 1e6:.2f} MB ({a.type})')


if __name__ == '__main__':
    main()
