"""XLA error codes in a crash log: the category a code stands for and the fix its page recommends.

Newer XLA releases print a code and a link with the message ("E1200: CompileTimeHostOffloadOutputLocation
Mismatch: ... See https://openxla.org/xla/errors/error_1200 for more details."). The code is XLA's own
classification, so it holds for wordings nobody collected: crashlog adds a vote for the code's category
(tpu_runtime/data/xla_error_codes.yaml) and, when no cause-specific sub-rule applied, gives the code's fix
with its page as the citation (sub-rule `<category>/xla_error_code`).

Only the forms XLA writes are read: `E1234: Name` (its GetErrorCodeAndName), an `openxla.org/xla/errors/
error_1234` link and "error code E1234". A bare `E1234` is not a code: glog's error lines begin with one
("E1103 09:12:44.118203 ...", severity and date).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from pathlib import Path

from pydantic import BaseModel, Field

from tpu_runtime.diagnose.report import Category
from tpu_runtime.yaml_data import safe_load

__all__ = ["CODES_FILE", "ErrorCode", "XlaCodeHit", "find_xla_error_code", "load_error_codes", "lookup"]

CODES_FILE = Path(__file__).resolve().parents[1] / "data" / "xla_error_codes.yaml"

_CODE_FORMS = re.compile(
    r"\b(?P<named>[EC]\d{4}): [A-Z][A-Za-z]+"
    r"|openxla\.org/xla/errors/error_(?P<linked>C?\d{4}|\d{2}xx|\dxxx)\b"
    r"|\b[Ee]rror code:? (?P<spelled>[EC]\d{4}|E\d{2}xx|E\dxxx)\b"
)


class ErrorCode(BaseModel):
    """One code's entry: the category it votes for (None: fix only), its page and the fix in our words."""

    category: Category | None = Field(default=None, description="triage category; None lends only the fix")
    url: str = Field(pattern=r"^https://openxla\.org/xla/errors/error_\w+$")
    fix: str = Field(min_length=40)


class XlaCodeHit(BaseModel):
    """A code found in a log: as written, the entry it resolved to (exact or its family) and the line."""

    code: str
    entry_code: str
    entry: ErrorCode
    line: int


@functools.cache
def load_error_codes(path: Path = CODES_FILE) -> dict[str, ErrorCode]:
    """The table of codes, validated; keys are codes (`E1000`, `C0432`) or families (`E03xx`, `E2xxx`)."""
    data = safe_load(path.read_text(encoding="utf-8"))
    codes = {str(code): ErrorCode.model_validate(entry) for code, entry in data["codes"].items()}
    for code in codes:
        if not re.fullmatch(r"[EC]\d{4}|E\d{2}xx|E\dxxx", code):
            raise ValueError(f"{path}: {code!r} is not an XLA error code or family")
    return codes


def lookup(code: str, codes: Mapping[str, ErrorCode] | None = None) -> tuple[str, ErrorCode] | None:
    """The entry for a code: its own, else its two-digit family (E03xx), else its one-digit family (E2xxx)."""
    table = load_error_codes() if codes is None else codes
    for key in (code, f"{code[:3]}xx", f"{code[:2]}xxx"):
        if key in table:
            return key, table[key]
    return None


def find_xla_error_code(
    lines: Sequence[str], codes: Mapping[str, ErrorCode] | None = None
) -> XlaCodeHit | None:
    """The last XLA error code in the log that the table knows (the fatal error is usually last)."""
    for index in range(len(lines) - 1, -1, -1):
        for m in reversed(list(_CODE_FORMS.finditer(lines[index]))):
            raw = m["named"] or m["spelled"] or m["linked"]
            code = raw if raw[0] in "EC" else f"E{raw}"
            found = lookup(code, codes)
            if found is not None:
                return XlaCodeHit(code=code, entry_code=found[0], entry=found[1], line=index)
    return None
