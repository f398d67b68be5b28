"""What a person checks by hand on a converged test-bed node: the venv's interpreter and pins, torch (CPU build)
and its gloo backend, TensorFlow on node1, the aiacc role's fallback choice, knobs reaching a login shell."""

from __future__ import annotations

import hashlib
import json

VENV = "/opt/scc/venv"
PY = f"{VENV}/bin/python"


def _fact(host, name: str) -> dict:
    return json.loads(host.file(f"/etc/ansible/facts.d/scc_{name}.fact").content_string)


def test_venv_interpreter(host) -> None:
    out = host.check_output(f"{PY} -c 'import sys; print(sys.version_info[:2], sys.prefix != sys.base_prefix)'")
    assert out == "(3, 11) True"


def test_pip_config_uses_the_copied_ca_bundle_and_wheel_dir(host) -> None:
    conf = host.file("/etc/pip.conf").content_string
    assert "cert = /etc/scc/pip-ca.pem" in conf
    assert "/opt/wheels" in conf
    assert host.file("/etc/scc/pip-ca.pem").size > 1000
    assert "/etc/scc/pip-ca.pem" in host.check_output(f"{PY} -m pip config list")


def test_pinned_packages(host) -> None:
    freeze = host.check_output(f"{PY} -m pip freeze").lower().split()
    for pin in ("torch==2.13.0+cpu", "numpy==2.0.2", "transformers==4.57.6", "tokenizers==0.22.2", "pyyaml==6.0.2"):
        assert pin in freeze


def test_installs_are_hash_checked_from_the_lock(host) -> None:
    """Every package in the venv that the roles installed came from a requirements file with --hash lines, and its
    installed version is the lock's; a wrong hash makes pip refuse the install (checked with the real pip)."""
    files = ["python36", "pytorch"] + (["tensorflow"] if host.backend.get_hostname() == "rt-node1" else [])
    freeze = {line.split("==")[0].lower().replace("_", "-"): line.split("==")[1]
              for line in host.check_output(f"{PY} -m pip freeze --all").lower().split() if "==" in line}
    for name in files:
        lines = host.file(f"{VENV}/scc-requirements/{name}.txt").content_string.split("\n")
        pins = [line for line in lines if line.strip()]
        assert pins and all(" --hash=sha256:" in line for line in pins), name
        for line in pins:
            pkg, version = line.split(" ")[0].split("==")
            assert freeze.get(pkg) == version, (name, pkg, version, freeze.get(pkg))
    tampered = "pyyaml==6.0.2 --hash=sha256:" + "0" * 64
    cmd = host.run(f"echo '{tampered}' > /tmp/tampered.txt && {PY} -m pip install --require-hashes --force-reinstall "
                   "--no-deps -r /tmp/tampered.txt")
    assert cmd.rc != 0 and "THESE PACKAGES DO NOT MATCH THE HASHES" in cmd.stderr


def test_torch_cpu_build_and_gloo_allreduce(host) -> None:
    # The process group is destroyed before the interpreter exits, as the pytorch role's probe does: a gloo group
    # left to interpreter teardown can abort it ("terminate called without an active exception", exit 134).
    code = ("import torch, torch.distributed as d, tempfile, os; f = tempfile.mktemp(); "
            "d.init_process_group('gloo', init_method='file://' + f, rank=0, world_size=1); "
            "t = torch.ones(3); d.all_reduce(t); d.destroy_process_group(); os.path.exists(f) and os.unlink(f); "
            "print(torch.__version__, torch.cuda.is_available(), t.sum().item())")
    assert host.check_output(f'{PY} -c "{code}"') == "2.13.0+cpu False 3.0"


def test_pytorch_fact(host) -> None:
    fact = _fact(host, "pytorch")
    assert fact["method"] == "install"
    assert fact["version"] == "2.13.0+cpu"
    assert fact["cuda_available"] is False and fact["device_count"] == 0
    assert fact["gloo"] is True
    assert fact["modules"] == {"numpy": "2.0.2", "transformers": "4.57.6", "tokenizers": "0.22.2"}


def test_python36_fact_records_the_current_package_list(host) -> None:
    fact = _fact(host, "python36")
    freeze = sorted(host.check_output(f"{PY} -m pip freeze --disable-pip-version-check").splitlines())
    assert fact["python_version"] == "3.11"
    assert fact["freeze"] == freeze
    assert fact["freeze_sha256"] == hashlib.sha256("\n".join(freeze).encode()).hexdigest()


def test_tensorflow_only_where_enabled(host) -> None:
    name = host.backend.get_hostname()
    probe = host.run(f"{PY} -c \"import tensorflow as tf; print(tf.__version__, "
                     "len(tf.config.list_physical_devices('GPU')))\"")
    if name == "rt-node1":
        assert probe.rc == 0, probe.stderr
        assert probe.stdout.split()[-2:] == ["2.18.1", "0"]
        assert _fact(host, "tensorflow")["version"] == "2.18.1"
    else:
        assert probe.rc != 0 and "No module named 'tensorflow'" in probe.stderr
        assert not host.file("/etc/ansible/facts.d/scc_tensorflow.fact").exists


def test_aiacc_fallback_choice_is_recorded(host) -> None:
    fact = _fact(host, "aiacc")
    assert fact["backend"] == "native" and fact["requested"] == "auto"
    if host.backend.get_hostname() == "rt-node1":
        assert fact["source"] == ""
        assert fact["reason"] == "no AIACC-Training source configured; fallback native"
    else:
        assert fact["source"] == "wheel_dir"
        assert "`import perseus.torch.horovod` failed" in fact["reason"]
        assert "ImportError: cannot import name '_perseus_ops' from 'perseus.torch'" in fact["reason"]
        # the stand-in was installed from the wheel directory, never from an index
        assert "perseus-torch==0.0.1" in host.check_output(f"{PY} -m pip freeze")


def test_knobs_reach_a_login_shell_and_the_mpirun_list(host) -> None:
    node2 = host.backend.get_hostname() == "rt-node2"
    env = host.file("/etc/scc/scc.env").content_string
    assert "# BEGIN scc.nlp_training aiacc" in env and "# END scc.nlp_training aiacc" in env
    assert "PERSEUS_" not in env and "HOROVOD_" not in env  # native backend: no foreign knobs
    shell = host.check_output("bash -lc 'echo $SCC_COMM_BACKEND $SCC_TRAINER_BACKEND $SCC_GRAD_COMPRESSION "
                              "$SCC_DDP_BUCKET_CAP_MB'")
    assert shell == ("native torch fp16 64" if node2 else "native torch none 128")
    names = [line for line in host.file("/etc/scc/mpirun-env.list").content_string.splitlines()
             if line and not line.startswith("#")]
    assert names == ["SCC_COMM_BACKEND", "SCC_TRAINER_BACKEND", "SCC_GRAD_COMPRESSION", "SCC_DDP_BUCKET_CAP_MB"]
