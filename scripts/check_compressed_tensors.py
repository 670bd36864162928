#!/usr/bin/env python3
"""Checks opchain's compressed-tensors writer and reader against compressed-tensors itself.

For each compressed-tensors variant `opchain quantize` writes (W8A8 int-quantized; W4A16 pack-quantized,
symmetric and with zero points), every quantised layer of the written model is:
  1. decompressed by compressed-tensors' own compressor classes, and compared with the weight the
     repository's independent numpy reader (tests/quant/dequantize.py) gets from the same files: the
     numpy reader is what the engine's f32 logits are tested against (tests/quant), so agreement here ties
     the engine to the library;
  2. re-packed with compressed-tensors' pack_to_int32 from the codes it unpacked, which must reproduce
     opchain's weight_packed / weight_zero_point bytes exactly.

Act-order (`weight_g_idx`) files are not compared: compressed-tensors 0.20's decompress does not read
`weight_g_idx` (its dequantize has no group-map argument), while vLLM does; tests/quant covers them against
the numpy reader. Checked with compressed-tensors 0.20.1: every layer of every variant agrees exactly
(with the scales widened to f32, as the engine's f32 precision computes).

Not part of CI: compressed-tensors needs torch (several GB from PyPI). Run it in a virtual environment:

    python3 -m venv /tmp/ct && /tmp/ct/bin/pip install compressed-tensors numpy safetensors
    /tmp/ct/bin/python scripts/check_compressed_tensors.py --opchain build/apps/opchain/opchain
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import torch
from safetensors.torch import load_file

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "quant"))
import dequantize  # noqa: E402  (the repository's numpy reader)

from compressed_tensors.compressors.naive_quantized.base import IntQuantizationCompressor  # noqa: E402
from compressed_tensors.compressors.pack_quantized.base import PackedQuantizationCompressor  # noqa: E402
from compressed_tensors.compressors.pack_quantized.helpers import pack_to_int32, unpack_from_int32  # noqa: E402
from compressed_tensors.quantization import QuantizationScheme  # noqa: E402

VARIANTS = {
    "w8a8": ["--format", "w8a8"],
    "w4a16": ["--format", "w4a16", "--group-size", "32"],
    "w4a16-asym": ["--format", "w4a16", "--group-size", "32", "--symmetric", "false"],
}


def check(opchain: str, model: Path, variant: str, work: Path) -> int:
    out = work / variant
    subprocess.run([opchain, "quantize", "--model", str(model), "--out", str(out), *VARIANTS[variant]], check=True,
                   capture_output=True)
    qc = json.loads((out / "config.json").read_text())["quantization_config"]
    group = next(iter(qc["config_groups"].values()))
    scheme = QuantizationScheme(targets=group["targets"], weights=group["weights"],
                                input_activations=group.get("input_activations"))
    tensors = load_file(str(out / "model.safetensors"))
    np_tensors = dequantize.read_model(out)
    packed = qc["format"] == "pack-quantized"
    layers = dequantize.quantised_modules(np_tensors, "compressed-tensors")
    worst, failures = 0.0, 0
    for m in layers:
        local = {k[len(m) + 1:]: v for k, v in tensors.items() if k.startswith(m + ".") and "." not in k[len(m) + 1:]}
        compressor = PackedQuantizationCompressor if packed else IntQuantizationCompressor
        ours = dequantize.dequant_ct(np_tensors, m, qc).astype(np.float32)
        # compressed-tensors dequantises in the scale's dtype (bf16 here); with the scales widened to f32 it
        # computes the exact values the engine's f32 precision uses.
        wide = dict(local, weight_scale=local["weight_scale"].to(torch.float32))
        theirs = compressor.decompress(wide, scheme)["weight"].to(torch.float32).numpy()
        err = float(np.max(np.abs(theirs - ours)))
        worst = max(worst, err)
        if err > 1e-6:
            failures += 1
            print(f"  {m}: compressed-tensors and the numpy reader differ by {err}")
        if packed:
            shape = tuple(int(v) for v in local["weight_shape"])
            codes = unpack_from_int32(local["weight_packed"], 4, torch.Size(shape))
            if not torch.equal(pack_to_int32(codes, 4), local["weight_packed"]):
                failures += 1
                print(f"  {m}: pack_to_int32 does not reproduce weight_packed")
            if "weight_zero_point" in local:
                zshape = (shape[0], local["weight_scale"].shape[-1])
                zp = unpack_from_int32(local["weight_zero_point"], 4, torch.Size(zshape), packed_dim=0)
                if not torch.equal(pack_to_int32(zp, 4, packed_dim=0), local["weight_zero_point"]):
                    failures += 1
                    print(f"  {m}: pack_to_int32 does not reproduce weight_zero_point")
    print(f"{variant}: {len(layers)} layers, max |compressed-tensors - numpy reader| = {worst:.3g}, {failures} failures")
    return failures


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--opchain", default=str(ROOT / "build" / "apps" / "opchain" / "opchain"))
    ap.add_argument("--model", default=str(ROOT / "tests" / "data" / "models" / "tiny-qwen3-moe"))
    args = ap.parse_args()
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        for v in VARIANTS:
            failures += check(args.opchain, Path(args.model), v, Path(tmp))
    print("OK" if failures == 0 else f"{failures} FAILURES")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
