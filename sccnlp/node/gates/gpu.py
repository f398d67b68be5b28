"""GPU gates: GEMM TFLOP/s, device-to-device copy TB/s, pinned host<->device GB/s, GPU count, per GPU.

``python -m sccnlp.node.gates.gpu [--device cuda|cpu] [--quick] [--gemm-dtype bfloat16|float16] [--output FILE]``

Runs with the training venv's python (torch). Prints (and writes to FILE) JSON with ``facts`` and ``measurements``
for `sccnlp.node.gates.evaluate`: each metric once per node, the slowest GPU's value, with every GPU listed in
``detail``. ``--device cpu`` runs the same code on the CPU (for tests of the program logic, not a gate).
"""

import argparse
import functools
import json
import os
import platform
import sys
import time
from typing import Any, Callable

GIB = 1 << 30
_DTYPE_SHORT = {"bfloat16": "bf16", "float16": "fp16", "float32": "fp32"}


class Timer:
    """Wall time of a block of GPU work (synchronising before and after), or CPU work."""

    def __init__(self, torch: Any, device: Any) -> None:
        self.torch = torch
        self.device = device

    def sync(self) -> None:
        if self.device.type == "cuda":
            self.torch.cuda.synchronize(self.device)

    def run(self, work: "Callable[[], Any]", iters: int, warmup: int = 2) -> float:
        """Seconds per iteration of `work`."""
        for _round in range(warmup):
            work()
        self.sync()
        start = time.perf_counter()
        for _round in range(iters):
            work()
        self.sync()
        return (time.perf_counter() - start) / iters


def gemm_tflops(torch: Any, device: Any, dtype_name: str, sizes: "list[int]", iters: int) -> "tuple[float, str]":
    """Best dense matmul TFLOP/s over square sizes n (2*n^3 flops per product)."""
    dtype = getattr(torch, dtype_name)
    timer = Timer(torch, device)
    best, best_n = 0.0, 0
    for n in sizes:
        a = torch.randn(n, n, device=device, dtype=torch.float32).to(dtype)
        b = torch.randn(n, n, device=device, dtype=torch.float32).to(dtype)
        out = torch.empty(n, n, device=device, dtype=dtype)
        seconds = timer.run(functools.partial(torch.matmul, a, b, out=out), iters)
        tflops = 2.0 * n ** 3 / seconds / 1e12
        if tflops > best:
            best, best_n = tflops, n
    return best, f"best at n={best_n}"


def copy_tbps(torch: Any, device: Any, nbytes: int, iters: int) -> float:
    """Device-to-device copy, counting reads + writes (2 x nbytes per copy), TB/s."""
    src = torch.empty(nbytes, dtype=torch.uint8, device=device).fill_(1)
    dst = torch.empty_like(src)
    seconds = Timer(torch, device).run(lambda: dst.copy_(src), iters)
    return 2.0 * nbytes / seconds / 1e12


def host_device_gbps(torch: Any, device: Any, nbytes: int, iters: int) -> "tuple[float, float]":
    """Pinned host->device and device->host copy GB/s."""
    pinned = device.type == "cuda"
    host = torch.empty(nbytes, dtype=torch.uint8, pin_memory=pinned).fill_(1)
    dev = torch.empty(nbytes, dtype=torch.uint8, device=device)
    timer = Timer(torch, device)
    h2d = timer.run(lambda: dev.copy_(host, non_blocking=pinned), iters)
    d2h = timer.run(lambda: host.copy_(dev, non_blocking=pinned), iters)
    return nbytes / h2d / 1e9, nbytes / d2h / 1e9


def _plan(quick: bool, device_type: str) -> "dict[str, Any]":
    if device_type == "cpu":
        return {"sizes": [256] if quick else [512, 1024], "iters": 3, "copy": 16 << 20, "h2d": 16 << 20}
    if quick:
        return {"sizes": [4096], "iters": 10, "copy": 256 << 20, "h2d": 256 << 20}
    return {"sizes": [4096, 8192, 16384], "iters": 30, "copy": 2 * GIB, "h2d": 1 * GIB}


def measure(device_kind: str, quick: bool, gemm_dtype: str) -> "dict[str, Any]":
    """Run every gate on every visible GPU (or once on the CPU) and return facts + measurements."""
    import torch  # the training venv's torch; imported here so the module loads without it

    short = _DTYPE_SHORT.get(gemm_dtype, gemm_dtype)
    facts = {"python": platform.python_version(), "framework": "torch " + torch.__version__,
             "torch_cuda": getattr(torch.version, "cuda", None)}
    if device_kind == "cuda":
        if not torch.cuda.is_available():
            raise SystemExit(f"torch {torch.__version__} sees no CUDA device (torch.cuda.is_available() is False): "
                             "check the driver (nvidia-smi) and that the venv has a CUDA build of torch")
        devices = [torch.device("cuda", i) for i in range(torch.cuda.device_count())]
        names = [torch.cuda.get_device_name(d) for d in devices]
        facts["gpu_model"] = names[0]
        facts["torch_gpu_count"] = len(devices)
        try:
            facts["nccl"] = ".".join(str(v) for v in torch.cuda.nccl.version())
        except (AttributeError, RuntimeError):
            facts["nccl"] = None
        facts["cudnn"] = torch.backends.cudnn.version()
        torch.backends.cuda.matmul.allow_tf32 = False
    else:
        devices = [torch.device("cpu")]
        names = [platform.processor() or "cpu"]
    plan = _plan(quick, devices[0].type)
    per_gpu: dict[str, list[tuple[int, float]]] = {"gemm": [], "copy": [], "h2d": [], "d2h": []}
    gemm_notes = []
    for index, device in enumerate(devices):
        if device.type == "cuda":
            torch.cuda.set_device(device)
        tflops, note = gemm_tflops(torch, device, gemm_dtype, plan["sizes"], plan["iters"])
        per_gpu["gemm"].append((index, tflops))
        gemm_notes.append(note)
        per_gpu["copy"].append((index, copy_tbps(torch, device, plan["copy"], plan["iters"])))
        h2d, d2h = host_device_gbps(torch, device, plan["h2d"], plan["iters"])
        per_gpu["h2d"].append((index, h2d))
        per_gpu["d2h"].append((index, d2h))
        if device.type == "cuda":
            torch.cuda.empty_cache()
    metrics = [("gemm", f"gemm_{short}_tflops", "TFLOP/s"), ("copy", "copy_tbps", "TB/s"),
               ("h2d", "h2d_gbps", "GB/s"), ("d2h", "d2h_gbps", "GB/s")]
    measurements = []
    for key, name, unit in metrics:
        values = per_gpu[key]
        slowest = min(values, key=lambda item: item[1])
        listing = " ".join(f"{i}={v:.4g}" for i, v in values)
        detail = f"slowest GPU {slowest[0]}; per GPU {listing}" if len(values) > 1 else ""
        if key == "gemm":
            detail = "; ".join(p for p in (detail, gemm_notes[slowest[0]]) if p)
        measurements.append({"name": name, "value": round(slowest[1], 4), "unit": unit, "detail": detail})
    if device_kind == "cpu":
        for item in measurements:
            item["skip"] = "measured on the CPU (--device cpu), not a GPU gate"
    return {"facts": facts, "measurements": measurements, "devices": names}


def main(argv: "list[str] | None" = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sccnlp.node.gates.gpu", description=__doc__.splitlines()[0])
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    parser.add_argument("--quick", action="store_true", help="small sizes, few iterations (a smoke test)")
    parser.add_argument("--gemm-dtype", choices=sorted(_DTYPE_SHORT), default="bfloat16")
    parser.add_argument("--output", help="also write the JSON here")
    args = parser.parse_args(argv)
    result = measure(args.device, args.quick, args.gemm_dtype)
    text = json.dumps(result, indent=1, sort_keys=True)
    if args.output:
        tmp = args.output + ".tmp"
        with open(tmp, "w") as handle:
            handle.write(text + "\n")
        os.replace(tmp, args.output)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
