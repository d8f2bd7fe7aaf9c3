"""Writing GGUF files from numpy arrays, for loom's model makers
(make_sparse_gguf.py, make_arch_gguf.py): metadata values, tensors in f32,
f16, q8_0 and q4_0 (ggml's block layouts), 32-byte alignment, and reading a
file's metadata (to borrow its tokenizer). Numpy only (Debian's
python3-numpy).
"""
import struct

import numpy as np

GGUF_T = {0: 'B', 1: 'b', 2: 'H', 3: 'h', 4: 'I', 5: 'i', 6: 'f', 7: '?', 10: 'Q', 11: 'q', 12: 'd'}


def read_gguf_kv(path):
    """Metadata key/values of a GGUF file (tensor data is not read)."""
    d = open(path, 'rb').read()
    o = 0

    def rd(fmt):
        nonlocal o
        v = struct.unpack_from('<' + fmt, d, o)
        o += struct.calcsize('<' + fmt)
        return v[0]

    def rstr():
        nonlocal o
        n = rd('Q')
        s = d[o:o + n].decode('utf8', 'replace')
        o += n
        return s

    def rval(t):
        if t == 8:
            return rstr()
        if t == 9:
            at = rd('I')
            n = rd('Q')
            return [rval(at) for _ in range(n)]
        return rd(GGUF_T[t])

    if rd('I') != 0x46554747:
        raise SystemExit(f'{path}: not a GGUF file')
    rd('I')
    rd('Q')
    nkv = rd('Q')
    kv = {}
    for _ in range(nkv):
        k = rstr()
        t = rd('I')
        kv[k] = rval(t)
    return kv


def w_str(b, s):
    e = s.encode()
    b += struct.pack('<Q', len(e)) + e


def w_val(b, v):
    if isinstance(v, bool):
        b += struct.pack('<I?', 7, v)
    elif isinstance(v, int):
        b += struct.pack('<II', 4, v) if 0 <= v < 2**32 else struct.pack('<Iq', 11, v)
    elif isinstance(v, float):
        b += struct.pack('<If', 6, v)
    elif isinstance(v, str):
        b += struct.pack('<I', 8)
        w_str(b, v)
    elif isinstance(v, list):
        b += struct.pack('<I', 9)
        if all(isinstance(x, str) for x in v):
            b += struct.pack('<IQ', 8, len(v))
            for x in v:
                w_str(b, x)
        elif all(isinstance(x, float) for x in v):
            b += struct.pack('<IQ', 6, len(v)) + np.asarray(v, np.float32).tobytes()
        else:
            b += struct.pack('<IQ', 5, len(v)) + np.asarray(v, np.int32).tobytes()
    else:
        raise TypeError(v)


def q8_0(a):
    a = a.reshape(-1, 32)
    d = np.abs(a).max(axis=1) / 127.0
    q = np.round(a / np.where(d == 0, 1, d)[:, None]).astype(np.int8)
    out = np.zeros(a.shape[0], dtype=[('d', '<f2'), ('q', 'i1', 32)])
    out['d'] = d.astype(np.float16)
    out['q'] = q
    return out.tobytes()


def q4_0(a):
    # f16 scale, then 16 bytes: element j in the low nibble of byte j, j + 16 in the high one
    a = a.reshape(-1, 32)
    idx = np.argmax(np.abs(a), axis=1)
    mx = a[np.arange(a.shape[0]), idx]
    d = mx / -8.0
    inv = np.where(d == 0, 0, 1.0 / np.where(d == 0, 1, d))
    q = np.clip(np.floor(a * inv[:, None] + 8.5), 0, 15).astype(np.uint8)
    packed = (q[:, :16] | (q[:, 16:] << 4)).astype(np.uint8)
    out = np.zeros(a.shape[0], dtype=[('d', '<f2'), ('qs', 'u1', 16)])
    out['d'] = d.astype(np.float16)
    out['qs'] = packed
    return out.tobytes()


TYPE_IDS = {'f32': 0, 'f16': 1, 'q4_0': 2, 'q8_0': 8}


def encode(arr, ty):
    if ty == 0:
        return arr.astype(np.float32).tobytes()
    if ty == 1:
        return arr.astype(np.float16).tobytes()
    if ty == 2:
        return q4_0(arr)
    return q8_0(arr)


def decode_roundtrip(arr, ty):
    """The values loom will read for arr stored as type ty (f32 result)."""
    if ty == 0:
        return arr.astype(np.float32)
    if ty == 1:
        return arr.astype(np.float16).astype(np.float32)
    a = arr.reshape(-1, 32).astype(np.float32)
    if ty == 8:
        d = (np.abs(a).max(axis=1) / 127.0).astype(np.float16).astype(np.float32)
        q = np.round(a / np.where(d == 0, 1, d)[:, None])
        return (q * d[:, None]).reshape(arr.shape)
    idx = np.argmax(np.abs(a), axis=1)
    mx = a[np.arange(a.shape[0]), idx]
    d = mx / -8.0
    inv = np.where(d == 0, 0, 1.0 / np.where(d == 0, 1, d))
    q = np.clip(np.floor(a * inv[:, None] + 8.5), 0, 15)
    dh = d.astype(np.float16).astype(np.float32)
    return ((q - 8) * dh[:, None]).reshape(arr.shape)


def write_gguf(path, kv, tensors):
    """tensors: list of (name, numpy array [rows, cols] row-major, type id)."""
    blobs, infos, off = [], [], 0
    for name, arr, ty in tensors:
        raw = encode(arr, ty)
        pad = (-len(raw)) % 32
        infos.append((name, list(reversed(arr.shape)), ty, off))
        blobs.append(raw + b'\0' * pad)
        off += len(raw) + pad
    hdr = bytearray(struct.pack('<IIQQ', 0x46554747, 3, len(infos), len(kv)))
    for k, v in kv.items():
        w_str(hdr, k)
        w_val(hdr, v)
    for name, dims, ty, o in infos:
        w_str(hdr, name)
        hdr += struct.pack('<I', len(dims)) + b''.join(struct.pack('<Q', d) for d in dims)
        hdr += struct.pack('<IQ', ty, o)
    hdr += b'\0' * ((-len(hdr)) % 32)
    with open(path, 'wb') as f:
        f.write(hdr)
        for b in blobs:
            f.write(b)
    return sum(len(b) for b in blobs)
