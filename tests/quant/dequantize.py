"""An independent reader of quantised Hugging Face checkpoints, in numpy, for checking opchain from outside.

It follows each format's published layout (docs/quantization.md has the rules and their sources) and
shares no code with the C++ loader: it turns a quantised model directory into a dense float32 one whose
logits opchain can compute with its ordinary dense path.
"""
from __future__ import annotations

import json
import re
import shutil
import struct
from pathlib import Path

import numpy as np

# ---- safetensors ------------------------------------------------------------------------------------

_DTYPES = {"F32": np.float32, "F16": np.float16, "BF16": np.uint16, "I8": np.int8, "U8": np.uint8,
           "I32": np.int32, "I64": np.int64, "F8_E4M3": np.uint8}


def _fp8_e4m3fn_table() -> np.ndarray:
    """float8_e4m3fn: 1 sign, 4 exponent (bias 7), 3 mantissa bits; no infinities, S.1111.111 is NaN."""
    t = np.zeros(256, np.float32)
    for b in range(256):
        s = -1.0 if b & 0x80 else 1.0
        e, m = (b >> 3) & 0xF, b & 7
        if e == 15 and m == 7:
            t[b] = np.nan
        elif e == 0:
            t[b] = s * m / 8.0 * 2.0 ** -6
        else:
            t[b] = s * (1 + m / 8.0) * 2.0 ** (e - 7)
    return t


FP8 = _fp8_e4m3fn_table()


class Tensor:
    def __init__(self, dtype: str, shape: list[int], raw: np.ndarray):
        self.dtype, self.shape, self.raw = dtype, shape, raw

    def floats(self) -> np.ndarray:
        """Float tensors (f32, f16, bf16, fp8) as float32 values."""
        if self.dtype == "BF16":
            return (self.raw.astype(np.uint32) << 16).view(np.float32).reshape(self.shape)
        if self.dtype == "F8_E4M3":
            return FP8[self.raw].reshape(self.shape)
        if self.dtype in ("F32", "F16"):
            return self.raw.astype(np.float32).reshape(self.shape)
        raise ValueError(f"not a float tensor: {self.dtype}")

    def ints(self) -> np.ndarray:
        return self.raw.reshape(self.shape).astype(np.int64)


def read_file(path: Path) -> dict[str, Tensor]:
    data = path.read_bytes()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    out = {}
    for name, e in header.items():
        if name == "__metadata__":
            continue
        b, end = e["data_offsets"]
        raw = np.frombuffer(data, _DTYPES[e["dtype"]], offset=8 + n + b, count=(end - b) // np.dtype(_DTYPES[e["dtype"]]).itemsize)
        out[name] = Tensor(e["dtype"], e["shape"], raw)
    return out


def read_model(d: Path) -> dict[str, Tensor]:
    index = d / "model.safetensors.index.json"
    if index.exists():
        out = {}
        for f in sorted(set(json.loads(index.read_text())["weight_map"].values())):
            out.update(read_file(d / f))
        return out
    return read_file(d / "model.safetensors")


def write_model(d: Path, tensors: dict[str, tuple[str, list[int], bytes]]) -> None:
    header, offset, blobs = {}, 0, []
    for name in sorted(tensors):
        dtype, shape, blob = tensors[name]
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + len(blob)]}
        offset += len(blob)
        blobs.append(blob)
    text = json.dumps(header).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(d / "model.safetensors", "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for b in blobs:
            f.write(b)


# ---- the formats ------------------------------------------------------------------------------------

def unpack_nibbles(words: np.ndarray, axis: int) -> np.ndarray:
    """int32 words holding 8 unsigned 4-bit values, lowest bits first, unpacked along `axis`."""
    w = words.astype(np.int64) & 0xFFFFFFFF
    parts = [(w >> (4 * j)) & 0xF for j in range(8)]
    stacked = np.stack(parts, axis=axis + 1)  # word index, then nibble index
    shape = list(words.shape)
    shape[axis] *= 8
    return stacked.reshape(shape)


def fp8_blocks(q: np.ndarray, scale: np.ndarray, bn: int, bk: int) -> np.ndarray:
    rows, cols = q.shape
    s = np.repeat(np.repeat(scale, bn, axis=0), bk, axis=1)[:rows, :cols]
    return q * s


def dequant_fp8(t: dict, m: str, cfg: dict) -> np.ndarray:
    q = t[m + ".weight"].floats()
    block = cfg.get("weight_block_size")
    if block:
        return fp8_blocks(q, t[m + ".weight_scale_inv"].floats(), block[0], block[1])
    s = t[m + ".weight_scale"] if m + ".weight_scale" in t else t[m + ".weight_scale_inv"]
    return q * s.floats().reshape(-1)[0]


def dequant_gptq(t: dict, m: str, cfg: dict) -> np.ndarray:
    q = unpack_nibbles(t[m + ".qweight"].ints(), axis=0)          # [in, out]
    z = unpack_nibbles(t[m + ".qzeros"].ints(), axis=1)           # [groups, out]
    if cfg.get("checkpoint_format", cfg.get("format", "gptq")) != "gptq_v2":
        z = z + 1                                                  # v1 stores zero - 1
    s = t[m + ".scales"].floats()                                  # [groups, out]
    k = q.shape[0]
    gs = cfg["group_size"] if cfg["group_size"] != -1 else k
    g = t[m + ".g_idx"].ints() if m + ".g_idx" in t else np.arange(k) // gs
    return ((q - z[g]) * s[g]).T


AWQ_ORDER = [0, 2, 4, 6, 1, 3, 5, 7]  # nibble i holds output channel 8c + AWQ_ORDER[i]


def awq_unpack(words: np.ndarray) -> np.ndarray:
    nib = unpack_nibbles(words, axis=1)                            # nibble order
    out = np.empty_like(nib)
    for i, j in enumerate(AWQ_ORDER):
        out[:, j::8] = nib[:, i::8]
    return out


def dequant_awq(t: dict, m: str, cfg: dict) -> np.ndarray:
    q = awq_unpack(t[m + ".qweight"].ints())                       # [in, out]
    s = t[m + ".scales"].floats()
    k = q.shape[0]
    gs = cfg["group_size"] if cfg["group_size"] != -1 else k
    z = awq_unpack(t[m + ".qzeros"].ints()) if m + ".qzeros" in t else np.full_like(s, 8, dtype=np.int64)
    g = np.arange(k) // gs
    return ((q - z[g]) * s[g]).T


def ct_scheme(cfg: dict, m: str) -> dict | None:
    def match(pattern: str) -> bool:
        if pattern.startswith("re:"):
            return re.match(pattern[3:], m) is not None
        return pattern == m or pattern == "Linear"
    if any(match(p) for p in cfg.get("ignore", [])):
        return None
    for g in cfg["config_groups"].values():
        if any(match(p) for p in g["targets"]):
            return g
    return None


def dequant_ct(t: dict, m: str, cfg: dict) -> np.ndarray:
    g = ct_scheme(cfg, m)
    w = g["weights"]
    s = t[m + ".weight_scale"].floats()
    if w["type"] == "float":
        q = t[m + ".weight"].floats()
        if w["strategy"] == "block":
            return fp8_blocks(q, s, *w["block_structure"])
        return q * s.reshape(-1, 1) if s.size > 1 else q * s.reshape(-1)[0]
    if m + ".weight_packed" in t:                                  # signed codes stored plus 8, packed along the input
        out, k = (int(v) for v in t[m + ".weight_shape"].ints())
        q = unpack_nibbles(t[m + ".weight_packed"].ints(), axis=1)[:, :k] - 8
        zp = np.zeros(s.shape, np.int64)
        if m + ".weight_zero_point" in t:
            zp = unpack_nibbles(t[m + ".weight_zero_point"].ints(), axis=0)[:out] - 8
    else:
        q = t[m + ".weight"].ints()
        k = q.shape[1]
        zp = t[m + ".weight_zero_point"].ints() if m + ".weight_zero_point" in t else np.zeros(s.shape, np.int64)
    s = s.reshape(q.shape[0], -1)
    zp = zp.reshape(q.shape[0], -1)
    if s.shape[1] == 1:
        return (q - zp) * s
    gidx = t[m + ".weight_g_idx"].ints() if m + ".weight_g_idx" in t else np.arange(k) // w["group_size"]
    return (q - zp[:, gidx]) * s[:, gidx]


_SUFFIXES = {"fp8": (".weight", ".weight_scale_inv", ".weight_scale"), "gptq": (".qweight", ".qzeros", ".scales", ".g_idx"), "awq": (".qweight", ".qzeros", ".scales"),
             "compressed-tensors": (".weight", ".weight_scale", ".weight_zero_point", ".weight_packed", ".weight_shape", ".weight_g_idx")}
_READERS = {"fp8": dequant_fp8, "gptq": dequant_gptq, "awq": dequant_awq, "compressed-tensors": dequant_ct}


def quantised_modules(t: dict, method: str) -> list[str]:
    """Layers stored in a quantised form: those whose main tensor is not a float matrix."""
    mods = set()
    for name, x in t.items():
        if method == "fp8" and name.endswith(".weight") and x.dtype == "F8_E4M3":
            mods.add(name[:-len(".weight")])
        elif method in ("gptq", "awq") and name.endswith(".qweight"):
            mods.add(name[:-len(".qweight")])
        elif method == "compressed-tensors" and (name.endswith(".weight_packed") or (name.endswith(".weight") and x.dtype in ("I8", "F8_E4M3"))):
            mods.add(name[:name.rfind(".")])
    return sorted(mods)


def dequantize_model(src: Path, dst: Path) -> list[str]:
    """Writes dst: src with every quantised layer replaced by its dequantised float32 `.weight`."""
    config = json.loads((src / "config.json").read_text())
    qc = config.pop("quantization_config")
    method = qc["quant_method"]
    t = read_model(src)
    dst.mkdir(parents=True, exist_ok=True)
    out = {}
    mods = quantised_modules(t, method)
    owned = set()
    for m in mods:
        w = _READERS[method](t, m, qc).astype(np.float32)
        out[m + ".weight"] = ("F32", list(w.shape), w.tobytes())
        owned.update(m + s for s in _SUFFIXES[method])
    # fp8 fused experts (transformers' in-memory form): [E, rows, cols] codes with [E, gr, gc] scales.
    if method == "fp8":
        for name, x in t.items():
            if x.dtype == "F8_E4M3" and len(x.shape) == 3:
                bn, bk = qc["weight_block_size"]
                q, s = x.floats(), t[name + "_scale_inv"].floats()
                w = np.stack([fp8_blocks(q[e], s[e], bn, bk) for e in range(q.shape[0])]).astype(np.float32)
                out[name] = ("F32", list(w.shape), w.tobytes())
                owned.update({name, name + "_scale_inv"})
    for name, x in t.items():
        if name not in owned and name not in out:
            out[name] = (x.dtype, x.shape, x.raw.tobytes())
    write_model(dst, out)
    (dst / "config.json").write_text(json.dumps(config, indent=2))
    for f in src.iterdir():
        if f.is_file() and f.name != "config.json" and not f.name.startswith("model"):
            shutil.copy(f, dst / f.name)
    return mods
