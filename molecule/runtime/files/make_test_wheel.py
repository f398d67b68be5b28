"""Write perseus_torch-0.0.1-py3-none-any.whl into DIR: an AIACC-Training stand-in whose Horovod module fails to
import its native extension, the way a build for another CUDA/Python does. Standard library only (runs on a bare
node and on the controller), byte-identical on every build. Usage: python3 make_test_wheel.py DIR
"""

import base64
import hashlib
import os
import sys
import zipfile

FILES = {
    "perseus/__init__.py": '__version__ = "0.0.1"\n',
    "perseus/torch/__init__.py": "",
    "perseus/torch/horovod.py": "from perseus.torch import _perseus_ops  # the native extension is not in this build\n",
    "perseus_torch-0.0.1.dist-info/METADATA": "Metadata-Version: 2.1\nName: perseus-torch\nVersion: 0.0.1\n",
    "perseus_torch-0.0.1.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: scc-test\nRoot-Is-Purelib: true\n"
                                           "Tag: py3-none-any\n",
}


def _entry(name: str) -> zipfile.ZipInfo:
    """A zip entry with a fixed date and mode: the wheel is byte-identical on every build (its sha256 is pinned in
    molecule.yml, aiacc_wheel_sha256: the role installs it with --require-hashes)."""
    info = zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0))
    info.external_attr = 0o644 << 16
    return info


def main(target: str) -> None:
    os.makedirs(target, exist_ok=True)
    path = os.path.join(target, "perseus_torch-0.0.1-py3-none-any.whl")
    record = []
    with zipfile.ZipFile(path, "w") as wheel:
        for name, text in FILES.items():
            data = text.encode()
            wheel.writestr(_entry(name), data)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            record.append(f"{name},sha256={digest},{len(data)}")
        record.append("perseus_torch-0.0.1.dist-info/RECORD,,")
        wheel.writestr(_entry("perseus_torch-0.0.1.dist-info/RECORD"), "\n".join(record) + "\n")
    print(path)


if __name__ == "__main__":
    main(sys.argv[1])
