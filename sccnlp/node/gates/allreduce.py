"""torch.distributed all_reduce bus bandwidth on one node: the fallback when nccl-tests is not built.

``python -m sccnlp.node.gates.allreduce [--nproc N] [--device cuda|cpu] [--min-bytes B] [--max-bytes B] [--output F]``

Spawns N processes (default: every visible GPU), one GPU each, backend NCCL (gloo with ``--device cpu``, for tests
of the program logic), and times ``all_reduce`` of float32 buffers from min to max bytes (doubling). Bus bandwidth
follows nccl-tests: algbw = bytes / time, busbw = algbw x 2(n-1)/n. Output (JSON): ``curves.nccl_all_reduce``
[{size, algbw, busbw}] in GB/s and one measurement ``nccl_all_reduce_busbw_gbps`` (best busbw at sizes >=
``--floor-min-bytes``) for `sccnlp.node.gates.evaluate`.
"""

import argparse
import json
import os
import socket
import sys
import time
from typing import Any


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def sizes(min_bytes: int, max_bytes: int) -> "list[int]":
    out, size = [], max(4, min_bytes)
    while size <= max_bytes:
        out.append(size)
        size *= 2
    return out


def bus_factor(ranks: int) -> float:
    return 2.0 * (ranks - 1) / ranks if ranks > 0 else 0.0


def _worker(rank: int, world: int, port: int, device_kind: str, plan: "list[int]", iters: int, out: str) -> None:
    import torch
    import torch.distributed as dist

    backend = "nccl" if device_kind == "cuda" else "gloo"
    dist.init_process_group(backend, init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    device = torch.device("cuda", rank) if device_kind == "cuda" else torch.device("cpu")
    if device_kind == "cuda":
        torch.cuda.set_device(device)

    def sync() -> None:
        if device_kind == "cuda":
            torch.cuda.synchronize(device)

    rows = []
    for nbytes in plan:
        buf = torch.ones(nbytes // 4, dtype=torch.float32, device=device)
        for _round in range(2):
            dist.all_reduce(buf)
        sync()
        dist.barrier()
        start = time.perf_counter()
        for _round in range(iters):
            dist.all_reduce(buf)
        sync()
        seconds = (time.perf_counter() - start) / iters
        timing = torch.tensor([seconds], dtype=torch.float64, device=device)
        dist.all_reduce(timing, op=dist.ReduceOp.MAX)
        algbw = nbytes / float(timing.item()) / 1e9
        rows.append({"size": nbytes, "algbw": round(algbw, 4), "busbw": round(algbw * bus_factor(world), 4)})
    if rank == 0:
        with open(out, "w") as handle:
            json.dump(rows, handle)
    dist.destroy_process_group()


def run(nproc: int, device_kind: str, min_bytes: int, max_bytes: int, iters: int,
        floor_min_bytes: int) -> "dict[str, Any]":
    import tempfile

    import torch
    import torch.multiprocessing as mp

    if device_kind == "cuda":
        available = torch.cuda.device_count()
        nproc = nproc or available
        if nproc > available:
            raise SystemExit(f"--nproc {nproc} but torch sees {available} GPUs")
    nproc = nproc or 1
    plan = sizes(min_bytes, max_bytes)
    with tempfile.TemporaryDirectory(prefix="sccnlp-allreduce-") as tmp:
        out = os.path.join(tmp, "rows.json")
        mp.spawn(_worker, args=(nproc, _free_port(), device_kind, plan, iters, out), nprocs=nproc, join=True)
        with open(out) as handle:
            rows = json.load(handle)
    big = [r["busbw"] for r in rows if r["size"] >= floor_min_bytes]
    measurement: dict[str, Any] = {
        "name": "nccl_all_reduce_busbw_gbps", "unit": "GB/s", "ranks": nproc,
        "value": max(big) if big else None,
        "detail": f"torch.distributed all_reduce fallback (nccl-tests not built), {nproc} ranks, "
                  f"sizes >= {floor_min_bytes} bytes",
    }
    if nproc < 2:
        measurement["skip"] = "one rank: all_reduce moves no data between GPUs (bus bandwidth is 0 by definition)"
    elif not big:
        measurement["skip"] = f"largest size {plan[-1]} < {floor_min_bytes} bytes required by the floor"
    if device_kind == "cpu":
        measurement["skip"] = "measured on the CPU (gloo), not a GPU gate"
    return {"facts": {"comm_backend": "nccl" if device_kind == "cuda" else "gloo"},
            "curves": {"nccl_all_reduce": rows}, "measurements": [measurement]}


def main(argv: "list[str] | None" = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sccnlp.node.gates.allreduce", description=__doc__.splitlines()[0])
    parser.add_argument("--nproc", type=int, default=0, help="ranks (default: every visible GPU)")
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    parser.add_argument("--min-bytes", type=int, default=1 << 20)
    parser.add_argument("--max-bytes", type=int, default=8 << 30)
    parser.add_argument("--floor-min-bytes", type=int, default=4 << 30)
    parser.add_argument("--iters", type=int, default=20)
    parser.add_argument("--output", help="also write the JSON here")
    args = parser.parse_args(argv)
    result = run(args.nproc, args.device, args.min_bytes, args.max_bytes, args.iters, args.floor_min_bytes)
    text = json.dumps(result, indent=1, sort_keys=True)
    if args.output:
        with open(args.output + ".tmp", "w") as handle:
            handle.write(text + "\n")
        os.replace(args.output + ".tmp", args.output)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
