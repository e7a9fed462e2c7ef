"""XLA error codes in crash logs: found only in the forms XLA writes, mapped to a category and a fix that
cites the code's page, and kept in step with the knowledge sheets that describe the codes."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tpu_runtime.diagnose.crash_error_codes import find_xla_error_code, load_error_codes, lookup
from tpu_runtime.diagnose.crashlog import diagnose_log, signature

KNOWLEDGE = Path(__file__).resolve().parents[1] / "knowledge"
_PAGE = re.compile(r"https://openxla\.org/xla/errors/error_(?P<id>C?\d{4}|\d{2}xx|\dxxx)\b")


@pytest.mark.parametrize(
    ("line", "code", "entry"),
    [
        (
            "JaxRuntimeError: INVALID_ARGUMENT: E1200: CompileTimeHostOffloadOutputLocationMismatch:",
            "E1200",
            "E1200",
        ),
        ("Please read https://openxla.org/xla/errors/error_0200 carefully", "E0200", "E0200"),
        ("See https://openxla.org/xla/errors/error_1001 for more details.", "E1001", "E1001"),
        ("XLA error code: E1000 (compile-time HBM OOM)", "E1000", "E1000"),
        ("INTERNAL: E0305: CoreHaltUnexpectedPeer: launch id mismatch", "E0305", "E03xx"),
        ("INTERNAL: E2107: MosaicSomethingNew: cannot lower", "E2107", "E2xxx"),
        ("see https://openxla.org/xla/errors/error_C0432", "C0432", "C0432"),
    ],
)
def test_codes_in_the_forms_xla_writes(line: str, code: str, entry: str) -> None:
    hit = find_xla_error_code(["some earlier line", line])
    assert hit is not None
    assert (hit.code, hit.entry_code, hit.line) == (code, entry, 1)


@pytest.mark.parametrize(
    "line",
    [
        "E1103 09:12:44.118203  20417 train.py:88] step 1234 loss 2.3456",  # glog: severity and date
        "INTERNAL: E9999: NotInTheTable: whatever",  # a code no entry or family covers
        "the E1000 series of chips",
    ],
)
def test_not_a_code(line: str) -> None:
    assert find_xla_error_code([line]) is None


def test_the_last_code_wins() -> None:
    lines = ["E0100: RuntimeBufferAllocationFailure: first", "E1000: CompileTimeHbmOom: second"]
    hit = find_xla_error_code(lines)
    assert hit is not None and hit.code == "E1000"


def test_a_code_places_and_fixes_a_wording_no_rule_knows() -> None:
    log = (
        "Traceback (most recent call last):\n"
        "XlaRuntimeError: E3001: SparseCoreNoViableSplit: the embedding lookup cannot be split any further.\n"
        "See https://openxla.org/xla/errors/error_3001 for more details.\n"
    )
    crash = diagnose_log(log, "new_wording.log")
    assert crash.category == "vmem_oom"
    assert crash.evidence.fix_rule == "vmem_oom/xla_error_code"
    assert "max_nz_per_row" in crash.fix and "https://openxla.org/xla/errors/error_3001" in crash.fix
    assert any(c.url == "https://openxla.org/xla/errors/error_3001" for c in crash.citations)
    found = signature(log)
    assert found is not None and found[0] == "vmem_oom"


def test_a_known_wording_keeps_its_own_fix_and_gains_the_page() -> None:
    log = (
        "jax.errors.JaxRuntimeError: INVALID_ARGUMENT: E1200: CompileTimeHostOffloadOutputLocationMismatch:\n"
        "Tensor which is moved to host (starting from square.790) is returned from the entry computation but "
        "the layout for this output is not set to host memory.\n"
        "See https://openxla.org/xla/errors/error_1200 for more details.\n"
    )
    crash = diagnose_log(log, "e1200.log")
    assert crash.category == "xla_compile_error"
    assert crash.evidence.fix_rule == "xla_compile_error/host_offload_output"
    assert any(c.url == "https://openxla.org/xla/errors/error_1200" for c in crash.citations)


def test_a_code_without_a_category_casts_no_vote() -> None:
    entry = lookup("E0200")
    assert entry is not None and entry[1].category is None
    assert signature("Please read https://openxla.org/xla/errors/error_0200 carefully.") is None


def test_a_code_of_another_category_lends_no_fix() -> None:
    # an HBM OOM signature outvotes the code's category; the code's VMEM fix must not be given for it
    log = (
        "RESOURCE_EXHAUSTED: XLA:TPU compile permanent error. Ran out of memory in memory space hbm. "
        "Used 49.34G of 32.00G hbm. Exceeded hbm capacity by 17.34G.\n"
        "See https://openxla.org/xla/errors/error_1001 for more details.\n"
    )
    crash = diagnose_log(log, "mixed.log")
    assert crash.category == "hbm_oom"
    assert crash.evidence.fix_rule != "hbm_oom/xla_error_code"
    assert "error_1001" not in crash.fix


def _knowledge_pages() -> set[str]:
    found: set[str] = set()
    for sheet in KNOWLEDGE.glob("*.md"):
        found.update(m["id"] for m in _PAGE.finditer(sheet.read_text(encoding="utf-8")))
    return found


def test_every_code_page_the_knowledge_sheets_cite_has_an_entry_and_back() -> None:
    codes = load_error_codes()
    pages = {f"E{i}" if not i.startswith("C") else i for i in _knowledge_pages()}
    assert pages, "the knowledge sheets cite no XLA error page"
    assert pages <= set(codes), f"codes the sheets describe without an entry: {sorted(pages - set(codes))}"
    for code, entry in codes.items():
        assert code in pages, f"{code}: no knowledge fact cites {entry.url}"
        assert entry.url.endswith(f"error_{code.removeprefix('E')}")
