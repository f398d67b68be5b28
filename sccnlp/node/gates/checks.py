"""Turn measurements into checks of the results schema, with one message format for every failure.

A measurement is a dict: ``{"name", "value", "unit", "detail"?, "floor"?, "ceiling"?, "skip"?}``. Its floor comes
from the measurement itself or from the floors entry under the same name (``floors[name]``). ``skip`` is a reason:
the check is reported as ``skip``, never as ``pass``.

Failure message: ``"<host>: <name> <measured> < floor <floor>"`` (or ``> ceiling``), e.g.
``"node-2: gemm_bf16_tflops 700.1 < floor 720"``.
"""

from typing import Any, Optional


def fmt(value: Any) -> str:
    """Short human form of a number: 700.1234 -> '700.1', 3.9123 -> '3.912', 720.0 -> '720'."""
    if value is None:
        return "n/a"
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    if float(value).is_integer():
        return str(int(value))
    digits = 1 if abs(value) >= 100 else 3
    text = f"{value:.{digits}f}"
    return text.rstrip("0").rstrip(".")


def _number(value: Any) -> Optional[float]:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        return value
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def make_check(host: str, measurement: "dict[str, Any]", floors: "Optional[dict[str, Any]]" = None) -> "dict[str, Any]":
    """Return one check ``{name, status, measured, floor, unit, detail}`` (plus ``ceiling`` for upper bounds)."""
    name = str(measurement["name"])
    unit = str(measurement.get("unit", ""))
    measured = _number(measurement.get("value"))
    note = str(measurement.get("detail") or "")
    floor = _number(measurement.get("floor", (floors or {}).get(name)))
    ceiling = _number(measurement.get("ceiling"))
    check = {"name": name, "status": "skip", "measured": measured, "floor": floor, "unit": unit, "detail": note}
    if ceiling is not None:
        check["ceiling"] = ceiling
    skip = measurement.get("skip")
    if skip:
        check["detail"] = _join(f"{host}: {name} skipped: {skip}", note)
        return check
    if measured is None:
        check["status"] = "fail"
        check["detail"] = _join(f"{host}: {name} was not measured", note)
        return check
    if floor is None and ceiling is None:
        check["detail"] = _join(f"{host}: {name} {fmt(measured)} {unit} measured; no floor for it in floors.yml", note)
        return check
    if floor is not None and measured < floor:
        check["status"] = "fail"
        check["detail"] = _join(f"{host}: {name} {fmt(measured)} < floor {fmt(floor)}", note)
    elif ceiling is not None and measured > ceiling:
        check["status"] = "fail"
        check["detail"] = _join(f"{host}: {name} {fmt(measured)} > ceiling {fmt(ceiling)}", note)
    else:
        check["status"] = "pass"
        bound = f">= floor {fmt(floor)}" if floor is not None else f"<= ceiling {fmt(ceiling)}"
        check["detail"] = _join(f"{host}: {name} {fmt(measured)} {bound}", note)
    return check


def _join(head: str, note: str) -> str:
    return f"{head} ({note})" if note else head


def failures(checks: "list[dict[str, Any]]") -> "list[str]":
    """The detail line of every failed check."""
    return [str(c.get("detail") or c.get("name")) for c in checks if c.get("status") == "fail"]
