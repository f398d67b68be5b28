"""Small helpers shared by the parsers (number conversion, prefix stripping)."""

import re
from typing import Optional, Union

Number = Union[int, float]

_INT_RE = re.compile(r"^[+-]?\d+$")
_FLOAT_RE = re.compile(r"^[+-]?(\d+\.\d*|\.\d+|\d+)([eE][+-]?\d+)?$")
# Prefixes that mpirun / srun put before each line of a rank's output: "[1,0]<stdout>:" or "0: ".
_LAUNCHER_PREFIX_RE = re.compile(r"^(\[\d+,\d+\]<std(out|err)>:|\d+: )")

NOT_AVAILABLE = ("N/A", "n/a", "NA", "[N/A]", "Unknown Error", "Not Supported", "[Not Supported]")


def to_number(text: Optional[str]) -> Optional[Number]:
    """'12' -> 12, '2.5' -> 2.5, '2e-07' -> 2e-07, 'N/A' or garbage -> None."""
    if text is None:
        return None
    value = text.strip()
    if _INT_RE.match(value):
        return int(value)
    if _FLOAT_RE.match(value):
        return float(value)
    return None


def to_int(text: Optional[str]) -> Optional[int]:
    number = to_number(text)
    return int(number) if number is not None else None


def leading_number(text: Optional[str]) -> Optional[Number]:
    """The number a value starts with: '81559 MiB' -> 81559, '71.97 W' -> 71.97, '4096 (5)' -> 4096."""
    if text is None:
        return None
    match = re.match(r"^\s*([+-]?\d+(\.\d+)?)", text)
    return to_number(match.group(1)) if match else None


def strip_launcher_prefix(line: str) -> str:
    """Drop an mpirun '[1,0]<stdout>:' style prefix so rank-0 output parses like a plain run."""
    return _LAUNCHER_PREFIX_RE.sub("", line, count=1)


def yes_no(text: Optional[str]) -> Optional[bool]:
    if text is None:
        return None
    value = text.strip().lower()
    if value in ("yes", "enabled", "active", "on", "true"):
        return True
    if value in ("no", "disabled", "not active", "off", "false", "none"):
        return False
    return None
