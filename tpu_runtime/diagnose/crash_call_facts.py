"""Call-site facts: what the last traceback frame was doing when the program stopped, in any wording.

A Python traceback says more than its last line: the frame that raised (a file inside an installed package or
the user's own), the statement it ran (quoted under the frame), and the exception. Three failures are read
from that pairing, whatever the message's wording:

- a call from one installed package into another that the callee refuses by its signature (`f() missing 1
  required positional argument: 'tag'`, `got an unexpected keyword argument 'x'`, `takes 2 positional
  arguments but 3 were given`): the two packages were released apart (`signature_skew`);
- a statement that builds a device mesh from the device list (`jax.devices()`, `jax.device_count()`,
  `xr.global_runtime_device_count()`) failing on a size of one or a dimension of zero: the framework saw a
  single (CPU) device, no accelerator (`single_device_query`);
- TensorFlow's client failing inside the code that parses what the TPU runtime reported (its topology or
  system metadata): client and TPU software of different releases (`runtime_report_parse`).

Both the plain format (`File "x.py", line 3, in f` then the statement) and IPython's (`x.py in f(args)` then
numbered source with `--->` at the failing line) are read. The facts feed crash_setting_facts'
extractor list, so every crash rule's fixes and fact votes see them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = [
    "CALL_EXTRACTORS",
    "Frame",
    "last_frame",
    "runtime_report_facts",
    "signature_skew_facts",
    "single_device_facts",
]

MAX_LINES = 4000
MAX_CODE = 400  # a quoted statement longer than this is clipped before the call regexes read it

# File "/usr/lib/python3.10/site-packages/pkg/mod.py", line 12, in func
_PLAIN_FRAME = re.compile(r'^\s*File "(?P<path>[^"]+)", line \d+(?:, in (?P<func>[\w.<>]+))?')
# IPython: "/usr/lib/python3/dist-packages/pkg/mod.py in func(self, x)", "File /path/mod.py:122, in f"
_IPYTHON_FRAME = re.compile(
    r"^\s*(?:File )?(?:\[)?(?P<path>/[^\s\]]+\.py|<ipython-input-[\w-]+>|Cell In ?\[\d+\])"
    r"(?:\]\([^)]*\))?(?::\d+)?(?:, line \d+)?,?(?: in (?P<func>[\w.<>]+))?\s*(?:\(|$)"
)
# IPython's source excerpt: "---> 26 devices = ..." marks the failing line; "     25 x = ..." its neighbours.
_IPYTHON_ARROW = re.compile(r"^\s*-+> *\d+ (?P<code>.+)$")
_SITE = re.compile(r"/(?:site|dist)-packages/(?P<package>[A-Za-z_]\w*)")


@dataclass(frozen=True)
class Frame:
    """One traceback frame: the file, the function, the statement it was running (if quoted)."""

    path: str
    func: str
    code: str
    quoted: tuple[str, ...] = ()
    """The log lines the frame was read from (the frame line and the statement line), for evidence."""

    @property
    def package(self) -> str | None:
        """The installed package the frame's file belongs to; None for the user's code or the stdlib."""
        found = _SITE.search(self.path)
        return found["package"] if found else None


def last_frame(lines: Sequence[str]) -> Frame | None:
    """The innermost frame of the last traceback in the lines, with the statement it ran ('' if unquoted)."""
    window = list(lines[-MAX_LINES:])
    for i in range(len(window) - 1, -1, -1):
        plain = _PLAIN_FRAME.match(window[i])
        if plain is not None:
            code = window[i + 1].strip() if i + 1 < len(window) else ""
            if _PLAIN_FRAME.match(code) or _is_exception_line(code):
                code = ""
            shown = (window[i].strip(), code) if code else (window[i].strip(),)
            return Frame(plain["path"], plain["func"] or "", code[:MAX_CODE], shown)
        ipy = _IPYTHON_FRAME.match(window[i])
        if ipy is not None:
            code = ""
            quoted: tuple[str, ...] = (window[i].strip(),)
            for following in window[i + 1 : i + 12]:
                arrow = _IPYTHON_ARROW.match(following)
                if arrow is not None:
                    code = arrow["code"].strip()
                    quoted = (*quoted, following.strip())
                    break
            return Frame(ipy["path"], ipy["func"] or "", code[:MAX_CODE], quoted)
    return None


def _is_exception_line(line: str) -> bool:
    return re.match(r"^[\w.]*(?:Error|Exception|Exit|Interrupt)\b", line) is not None


# "TypeError: rendezvous() missing 1 required positional argument: 'tag'"
_SIGNATURE = re.compile(
    r"\bTypeError: (?:[\w.]+\.)?(?P<func>\w+)\(\) (?P<problem>"
    r"missing \d+ required (?:positional |keyword-only )?arguments?: '(?P<missing>\w+)'"
    r"|got an unexpected keyword argument '(?P<unexpected>\w+)'"
    r"|got multiple values for (?:keyword )?argument '(?P<multiple>\w+)'"
    r"|takes (?:from \d+ to )?\d+ positional arguments? but \d+ (?:was|were) given)"
)
# A call qualified by a module path or an alias: "torch_xla.core.xla_model.rendezvous(", "xm.rendezvous(".
_QUALIFIED_CALL = re.compile(r"(?<![\w.])(?P<call>(?P<root>[A-Za-z_]\w*)(?:\.\w+)*\.(?P<func>\w+))\(")
_NOT_MODULES = frozenset({"self", "cls", "super", "args", "kwargs", "obj", "fn", "func", "f"})


def signature_skew_facts(lines: Sequence[str]) -> dict[str, str | list[str]]:
    """`signature_skew`: an installed package calling another package's function with arguments the installed
    release of that function refuses; `skew_caller_package`, `skew_call`, `skew_callee_module`,
    `skew_problem`, and `skew_action` (what the call would need: pass or drop the named argument)."""
    window = list(lines[-MAX_LINES:])
    signature = next((m for line in reversed(window) if (m := _SIGNATURE.search(line))), None)
    frame = last_frame(window)
    if signature is None or frame is None or frame.package is None:
        return {}
    call = next(
        (
            m
            for m in _QUALIFIED_CALL.finditer(frame.code)
            if m["func"] == signature["func"] and m["root"] not in _NOT_MODULES
        ),
        None,
    )
    if call is None or call["root"] == frame.package:
        return {}
    if signature["missing"]:
        action = f"pass a {signature['missing']} argument"
    elif signature["unexpected"]:
        action = f"drop the {signature['unexpected']} argument"
    elif signature["multiple"]:
        action = f"pass {signature['multiple']} once"
    else:
        action = "pass the arguments the installed release takes"
    return {
        "signature_skew": f"{frame.package} -> {call['call']}()",
        "signature_skew_lines": [*frame.quoted, signature.string.strip()],
        "skew_caller_package": frame.package,
        "skew_call": call["call"],
        "skew_callee_module": call["root"],
        "skew_problem": signature["problem"],
        "skew_action": action,
    }


# Calls that return the device list or its size in jax, PyTorch/XLA and TensorFlow.
_DEVICE_QUERY = re.compile(
    r"\b(?P<query>(?:jax\.)?(?:local_)?devices\(|(?:jax\.)?(?:local_)?device_count\(|"
    r"global_runtime_device_count\(|addressable_runtime_device_count\(|get_xla_supported_devices\(|"
    r"xrt_world_size\(|list_logical_devices\(|list_physical_devices\()"
)
# A reshape of a single element, or a target with a zero dimension: "cannot reshape array of size 1 into
# shape (0,8)"; "Number of devices 1 must equal the product of mesh_shape (1, 8)".
_ONE_DEVICE = re.compile(
    r"\bof size 1 into shape|\binto shape \((?:\d+, ?)*0,|\bNumber of devices 1 must\b|"
    r"\bfound 1, expected (?:[2-9]|\d\d)"
)


def single_device_facts(lines: Sequence[str]) -> dict[str, str | list[str]]:
    """`single_device_query`: the failing statement builds from the device list, and the error shows it held
    one device (or a mesh dimension of zero from integer division by the cores wanted)."""
    window = list(lines[-MAX_LINES:])
    frame = last_frame(window)
    if frame is None or not frame.code:
        return {}
    query = _DEVICE_QUERY.search(frame.code)
    if query is None:
        return {}
    shown = next((line.strip() for line in reversed(window[-40:]) if _ONE_DEVICE.search(line)), None)
    if shown is None:
        return {}
    return {
        "single_device_query": query["query"].rstrip("("),
        "device_query_statement": frame.code,
        "single_device_query_lines": [*frame.quoted[1:], shown],
    }


# TensorFlow's TPU client reading the runtime's reports: tensorflow/python/tpu/topology.py (_parse_topology),
# tpu_system_metadata.py, device_assignment.py.
_RUNTIME_REPORT = re.compile(
    r"tensorflow(?:_core)?/python/tpu/(?P<file>topology|tpu_system_metadata|device_assignment)\.py"
)

# The module's own check saying that the master it asked has no TPU device at all ("Cannot find any TPU cores
# in the system (master address ...)", tpu_system_metadata.py): the TPU was not reached, which is not a
# report of another release's format (round diag113).
_NO_TPU_FOUND = re.compile(
    r"(?i)\bCannot find any TPU (?:cores|devices)\b|\bTPUs? (?:were )?not found in the cluster\b"
)


def runtime_report_facts(lines: Sequence[str]) -> dict[str, str | list[str]]:
    """`runtime_report_parse`: the exception was raised inside the TensorFlow code that parses what the TPU
    runtime reported (its topology, its system metadata), not in the user's model; a check there saying the
    master has no TPU device at all is a TPU not reached, not a report it could not parse."""
    frame = last_frame(list(lines[-MAX_LINES:]))
    if frame is None:
        return {}
    found = _RUNTIME_REPORT.search(frame.path)
    if found is None or any(_NO_TPU_FOUND.search(line) for line in lines[-40:]):
        return {}
    return {
        "runtime_report_parse": f"{found['file']}.py in {frame.func}",
        "runtime_report_parse_lines": list(frame.quoted),
    }


CALL_EXTRACTORS = (signature_skew_facts, single_device_facts, runtime_report_facts)
"""The extractors this module adds to the crash facts (crash_setting_facts.SETTING_EXTRACTORS runs them)."""
