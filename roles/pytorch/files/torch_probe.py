"""Probe the installed PyTorch: versions, CUDA devices, NCCL, gloo, and a one-process all-reduce.

Run by the pytorch role with the training interpreter (`python -c`); prints one JSON object on its last line.
Never raises: every failure becomes a field the role asserts on with a message.
"""
import json
import os
import sys
import tempfile


def collective(backend, device):
    """One-process all_reduce through torch.distributed: proves the backend is built in and initialises."""
    import torch
    import torch.distributed as dist

    handle, path = tempfile.mkstemp(prefix="scc-torch-probe-")
    os.close(handle)
    os.unlink(path)
    try:
        dist.init_process_group(backend, init_method="file://" + path, rank=0, world_size=1)
        tensor = torch.ones(4, device=device) * 3
        dist.all_reduce(tensor)
        ok = bool(tensor.sum().item() == 12)
        dist.destroy_process_group()
        return "ok" if ok else f"wrong result {tensor.tolist()}"
    except Exception as exc:  # reported, then asserted on by the role
        first = str(exc).splitlines()[0] if str(exc) else ""
        return f"{type(exc).__name__}: {first}"
    finally:
        if os.path.exists(path):
            os.unlink(path)


def main():
    out = {"python": sys.executable, "python_version": ".".join(str(v) for v in sys.version_info[:3])}
    try:
        import torch
    except Exception as exc:
        out["import_error"] = f"{type(exc).__name__}: {exc}"
        print(json.dumps(out))
        return
    import torch.distributed as dist

    out["version"] = torch.__version__
    out["cuda_build"] = torch.version.cuda or ""
    out["cuda_available"] = bool(torch.cuda.is_available())
    out["device_count"] = int(torch.cuda.device_count()) if out["cuda_available"] else 0
    out["devices"] = [torch.cuda.get_device_name(i) for i in range(out["device_count"])]
    out["cudnn"] = str(torch.backends.cudnn.version() or "") if out["cuda_available"] else ""
    out["distributed"] = bool(dist.is_available())
    out["gloo"] = bool(dist.is_available() and dist.is_gloo_available())
    out["nccl"] = bool(dist.is_available() and dist.is_nccl_available())
    out["nccl_version"] = ""
    if out["cuda_available"] and out["nccl"]:
        version = torch.cuda.nccl.version()
        out["nccl_version"] = ".".join(str(v) for v in version) if isinstance(version, tuple) else str(version)
    out["modules"] = {}
    for name in filter(None, os.environ.get("SCC_PROBE_MODULES", "").split(",")):
        try:
            from importlib import metadata

            out["modules"][name] = metadata.version(name)
        except Exception as exc:  # not installed, or Python < 3.8
            out["modules"][name] = f"not found: {type(exc).__name__}: {exc}"
    check = os.environ.get("SCC_PROBE_COLLECTIVE", "1") == "1"
    if check and out["cuda_available"] and out["nccl"]:
        out["allreduce"] = collective("nccl", "cuda:0")
    elif check and out["gloo"]:
        out["allreduce"] = collective("gloo", "cpu")
    else:
        out["allreduce"] = "skipped"
    out["allreduce_backend"] = "nccl" if out["cuda_available"] and out["nccl"] else "gloo"
    print(json.dumps(out))


main()
