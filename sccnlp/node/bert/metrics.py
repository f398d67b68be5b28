"""Throughput/MFU arithmetic and the stable per-interval stdout line (`sccnlp train` parses it with parse_line)."""

from __future__ import annotations

import re
from typing import Any

# Dense bf16 peak per GPU (fp16 for V100), datasheet values, TFLOP/s. Matched against the CUDA device name.
PEAK_TFLOPS = (("H200", 989.4), ("H100", 989.4), ("H800", 989.4), ("H20", 148.0), ("A100", 312.0),
               ("A800", 312.0), ("L40", 181.0), ("A10", 125.0), ("V100", 125.0))

LINE_RE = re.compile(
    r"^step=(?P<step>\d+) loss=(?P<loss>\S+) mlm=(?P<mlm>\S+) nsp=(?P<nsp>\S+) lr=(?P<lr>\S+) "
    r"seq/s=(?P<seq_per_s>\S+) seq/s/gpu=(?P<seq_per_s_gpu>\S+) mfu=(?P<mfu>\S+?)%? tok/s=(?P<tok_per_s>\S+) "
    r"mem=(?P<mem>\S+) skipped=(?P<skipped>\d+)$")


def peak_flops_for(device_name: str) -> float:
    """Peak FLOP/s for a GPU name, 0.0 when unknown."""
    upper = device_name.upper()
    for key, tflops in PEAK_TFLOPS:
        if key in upper:
            return tflops * 1e12
    return 0.0


def mfu(seq_per_s_gpu: float, seq_len: int, flops_per_token: float, peak: float) -> float | None:
    return seq_per_s_gpu * seq_len * flops_per_token / peak if peak else None


def format_line(rec: dict[str, Any]) -> str:
    """`step=120 loss=7.1230 mlm=6.9000 nsp=0.6900 lr=1.00e-04 seq/s=1850.2 seq/s/gpu=1850.2 mfu=45.1% ...`"""
    mfu_s = f"{rec['mfu'] * 100:.1f}%" if rec.get("mfu") is not None else "n/a"
    mem = f"{rec['mem_gib']:.1f}GiB" if rec.get("mem_gib") is not None else "n/a"
    return (f"step={rec['step']} loss={rec['loss']:.4f} mlm={rec['mlm']:.4f} nsp={rec['nsp']:.4f} "
            f"lr={rec['lr']:.2e} seq/s={rec['seq_per_s']:.1f} seq/s/gpu={rec['seq_per_s_gpu']:.1f} mfu={mfu_s} "
            f"tok/s={rec['tok_per_s']:.0f} mem={mem} skipped={rec['skipped']}")


def parse_line(line: str) -> dict[str, Any] | None:
    """Inverse of format_line (None for any other line). mfu is a fraction or None; mem in GiB or None."""
    m = LINE_RE.match(line.strip())
    if not m:
        return None
    g = m.groupdict()
    out: dict[str, Any] = {"step": int(g["step"]), "skipped": int(g["skipped"])}
    for key in ("loss", "mlm", "nsp", "lr", "seq_per_s", "seq_per_s_gpu", "tok_per_s"):
        out[key] = float(g[key])
    out["mfu"] = None if g["mfu"] == "n/a" else float(g["mfu"]) / 100
    out["mem_gib"] = None if g["mem"] == "n/a" else float(g["mem"].removesuffix("GiB"))
    return out
