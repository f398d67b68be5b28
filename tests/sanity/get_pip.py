"""Offline stand-in for the get-pip.py that ansible-test downloads to put pip into an empty sanity virtualenv.

ansible-test caches that script at ~/.ansible/test/cache/get_pip_<version>.py and runs it as
`python get_pip.py [pip options] pip==<version> [--no-setuptools] [--no-wheel]`. Without network it cannot fetch it,
so scripts/sanity.sh puts this file there: pip from the standard library's ensurepip, then the requested packages
from the package index pip is configured with (the same one .venv was installed from).
"""

from __future__ import annotations

import subprocess
import sys


def main() -> int:
    args = [a for a in sys.argv[1:] if a not in ("--no-setuptools", "--no-wheel")]
    subprocess.run([sys.executable, "-m", "ensurepip", "--default-pip"], check=True, stdout=subprocess.DEVNULL)
    return subprocess.run([sys.executable, "-m", "pip", "install", "-q", *args], check=False).returncode


if __name__ == "__main__":
    sys.exit(main())
