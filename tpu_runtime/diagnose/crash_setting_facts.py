"""The settings a crash log names itself: the sizes the program printed, an environment variable whose value
was refused, the values a message lists as accepted, the API a module lacks, the call that came too late,
the devices a mesh asked for against those visible, a setting allowed on one of two scopes but set on both,
and what the program was doing when it died.

The remedy for a crash most often changes one of these, and a log in a wording no rule was written for still
prints them: a training script logs `(device count, tokens per device) = (8, 1048576)` before its OOM, vLLM
logs `max_model_len=...` in its config line, PyTorch/XLA says `Unknown PJRT_DEVICE 'CUDA'`, a quantization
loader says `Supported methods are dict_keys([None, 'fp8'])`. Reading them from any wording lets the
category's fallbacks (crash_fix_packs) name the setting to change instead of the category's paragraph.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping, Sequence

from tpu_runtime.diagnose.crash_call_facts import CALL_EXTRACTORS

__all__ = [
    "SETTING_EXTRACTORS",
    "accepted_value_facts",
    "crash_phase_facts",
    "device_count_facts",
    "exclusive_scope_facts",
    "failed_import_facts",
    "graduated_api_facts",
    "init_order_facts",
    "mesh_device_facts",
    "missing_api_facts",
    "refused_env_facts",
    "rejected_flag_facts",
    "size_mismatch_facts",
    "size_setting_facts",
    "tf1_api_facts",
]

MAX_LINES = 4000
MAX_SETTINGS = 4

# A setting that sizes memory: batch, tokens, sequence or model length, pages, blocks, the KV pool fraction.
_SIZE_NAME = (
    r"(?:[a-z_]*batch[_ ]?size[a-z_]*|(?:global|micro|per[_ ]device[a-z_]*|train|eval)[_ ]batch[a-z_]*"
    r"|tokens?[ _]per[ _]device|[a-z_]*tokens?|[a-z_]*seq(?:uence)?[_ ]?len(?:gth)?"
    r"|max[_ ]model[_ ]len|max[_ ]num[_ ]seqs|context[_ ]length|[a-z_]*block[_ ]size|page[_ ]size"
    r"|chunk[_ ]size|image[_ ]size|gpu[_ ]memory[_ ]utilization|mem[_ ]fraction[_ ]static)"
)
_SIZE_VALUE = r"[0-9][0-9._eE+-]*"
# name = value, name: value, name=value, 'name': value, --name value, --name=value
_SIZE_SETTING = re.compile(
    rf"(?<![\w.-])(?:--)?['\"]?(?P<name>{_SIZE_NAME})['\"]?\s*(?:=|:|\s(?=\d))\s*(?P<value>{_SIZE_VALUE})\b",
    re.IGNORECASE,
)
# (device count, tokens per device) = (8, 1048576)
_TUPLE_SETTING = re.compile(r"\((?P<names>[^()=]{3,120})\)\s*=\s*\((?P<values>[^()=]{1,120})\)")
_SIZE_NAME_ONLY = re.compile(rf"^\s*{_SIZE_NAME}\s*$", re.IGNORECASE)
_SOURCE_LINE = re.compile(r'^\s*(?:File "|\^|~)|^\s*(?:def |return |if |for |with |import |from )')


def _not_source(lines: Sequence[str]) -> list[str]:
    """The lines, less Python source code a traceback quotes (the line after each `File "..."` frame)."""
    kept: list[str] = []
    after_frame = False
    for line in lines[-MAX_LINES:]:
        if after_frame or _SOURCE_LINE.match(line):
            after_frame = line.lstrip().startswith('File "')
            continue
        kept.append(line)
    return kept


def _matches_from_end(lines: Sequence[str], patterns: Sequence[re.Pattern[str]]) -> Iterator[re.Match[str]]:
    """Each match of the patterns, last line first (within a line, in the patterns' order): the message
    nearest the end of a log is the one that stopped the program."""
    for line in reversed(lines):
        for pattern in patterns:
            m = pattern.search(line)
            if m is not None:
                yield m


# "Consider setting --max-model-len to a smaller value" (vLLM's warning before an OOM it predicts)
_ADVISED = re.compile(
    r"\bconsider (?:setting|lowering|reducing|decreasing|raising|increasing) (?:the )?"
    r"(?P<name>--?[a-z][\w-]*|[a-z][a-z0-9]*(?:_[a-z0-9]+)+)"
    r"(?: to (?P<to>an? (?:smaller|larger|lower|higher) value))?",
    re.IGNORECASE,
)


def size_setting_facts(lines: Sequence[str]) -> dict[str, str]:
    """`size_settings`: the memory-sizing settings the log prints with their values, last value of each name
    first seen (`tokens per device = 1048576, max_model_len = 8192`), and those a warning of the log advises
    changing (`--max-model-len (a warning advises a smaller value)`); {} when the log names none."""
    found: dict[str, str] = {}
    for line in _not_source(lines):
        advised = _ADVISED.search(line)
        if advised is not None and _SIZE_NAME_ONLY.match(advised["name"].lstrip("-").replace("-", "_")):
            found.setdefault(advised["name"], f"(a warning advises {advised['to'] or 'changing it'})")
        for m in _TUPLE_SETTING.finditer(line):
            names = [n.strip() for n in m["names"].split(",")]
            values = [v.strip() for v in m["values"].split(",")]
            if len(names) == len(values):
                for name, value in zip(names, values, strict=True):
                    if _SIZE_NAME_ONLY.match(name) and re.fullmatch(_SIZE_VALUE, value):
                        found[name] = value
        for m in _SIZE_SETTING.finditer(line):
            name = m["name"]
            if name.lower() in {"tokens", "token", "num_tokens"} or line[m.end() :].startswith("/"):
                continue  # a count the program reached (`tokens: 512`, `batch_size: 3/100`), not a setting
            found[name] = m["value"].rstrip(".")
    if not found:
        return {}
    items = list(found.items())[:MAX_SETTINGS]
    shown = (f"{name} {value}" if value.startswith("(") else f"{name} = {value}" for name, value in items)
    return {"size_settings": ", ".join(shown)}


# "Unknown PJRT_DEVICE 'CUDA'", "Invalid value 'x' for XLA_FLAGS", "PJRT_DEVICE=FOO is not supported"
_REFUSED_ENV = (
    re.compile(
        r"\b(?:unknown|invalid|unsupported|unrecognized|unrecognised|bad)\s+(?:value\s+(?:of|for)\s+)?"
        r"(?P<var>[A-Z][A-Z0-9]*_[A-Z0-9_]+)\s*[:=]?\s*['\"]?(?P<value>[^'\"\s,;)]*)",
        re.IGNORECASE,
    ),
    re.compile(
        r"\b(?P<var>[A-Z][A-Z0-9]*_[A-Z0-9_]+)=['\"]?(?P<value>[^'\"\s,;)]+)['\"]?\s+(?:is\s+)?"
        r"(?:not (?:a )?(?:valid|supported|recognized)|invalid|unsupported)",
        re.IGNORECASE,
    ),
)


def refused_env_facts(lines: Sequence[str]) -> dict[str, str]:
    """`refused_env_var` (and `refused_env_value`) where a message refuses an environment variable's value."""
    for m in _matches_from_end(_not_source(lines), _REFUSED_ENV):
        if m["var"].isupper():
            out = {"refused_env_var": m["var"]}
            if m["value"]:
                out["refused_env_value"] = m["value"]
            return out
    return {}


# "Unknown command line flag 'xla_foo'", "Unknown flags in XLA_FLAGS: --xla_tpu_x=1", "Accessing retired flag
# 'jax_bar'", "unrecognized arguments: --baz"
_REJECTED_FLAG = re.compile(
    r"(?:unknown command line flag|unknown flags? in (?P<where>[A-Z][A-Z0-9_]+):?|retired flag|"
    r"unrecognized arguments?:|unknown (?:option|flag):?)\s*['\"]?(?P<flag>--?[\w.-]+|[a-z][\w.]*)",
    re.IGNORECASE,
)


def rejected_flag_facts(lines: Sequence[str]) -> dict[str, str]:
    """`rejected_flag` (and `flag_source`, the variable it came from) where a flag parser refuses a flag."""
    for m in _matches_from_end(_not_source(lines), (_REJECTED_FLAG,)):
        out = {"rejected_flag": m["flag"].split("=")[0]}
        if m["where"]:
            out["flag_source"] = m["where"]
        return out
    return {}


# "Supported methods are dict_keys([None, 'fp8'])", "must be one of ['a', 'b']", "expected one of: a, b",
# argparse's "invalid choice: 'x' (choose from a, b)",
# "Available platform names are: CUDA", "Valid values are ...",
# the quoted forms a value must take ("must be in 'N' or 'NxM' format", "should be of the form 'a:b'")
# and two or more quoted choices a component "can only be used with"
_QUOTED = r"(?:'[^'\s]{1,40}'|\"[^\"\s]{1,40}\"|`[^`\s]{1,40}`)"
_ACCEPTED = re.compile(
    r"\b(?:supported|valid|available|allowed|accepted)\s+(?:[\w-]+\s+){0,2}(?:are|is|include)\s*:?\s*"
    r"(?P<list>.+)$|\b(?:(?:must be|should be|expected)\s+one of|choose from)\s*:?\s*(?P<list2>.+)$|"
    rf"\b(?:must|should|needs? to) be (?:in|of) (?:the )?(?:forms? |formats? )?"
    rf"(?P<list3>{_QUOTED}(?:,? (?:or )?{_QUOTED})*)(?: (?:format|form)s?)?(?=[\s.,;:)]|$)|"
    # a component that works with listed choices only: "can only be used with a `A`, `B`, or `C`. Found D"
    rf"\b(?:can|may) only be (?:used|combined) with (?:an? |the )?"
    rf"(?P<list4>{_QUOTED}(?:,? (?:or )?{_QUOTED})+)",
    re.IGNORECASE,
)
_LIST_ITEMS = re.compile(r"'[^']+'|\"[^\"]+\"|\bNone\b|[\w.-]+")
_LIST_NOISE = {"dict_keys", "set", "list", "tuple", "and", "or", "got", "but"}


def accepted_value_facts(lines: Sequence[str]) -> dict[str, str]:
    """`accepted_values`: the values a refusal lists as accepted (`None, 'fp8'`), from the last such line."""
    for m in _matches_from_end(_not_source(lines), (_ACCEPTED,)):
        text = (m["list"] or m["list2"] or m["list3"] or m["list4"] or "").split(". ")[0]
        items = [i for i in _LIST_ITEMS.findall(text) if i not in _LIST_NOISE]
        if 1 <= len(items) <= 12:
            return {"accepted_values": ", ".join(dict.fromkeys(items))}
    return {}


_NO_ATTRIBUTE = re.compile(r"module '(?P<module>[A-Za-z_][\w.]*)' has no attribute '(?P<attr>\w+)'")


# "'TPUStrategyV2' object has no attribute 'experimental_run_v2'": an API that left its experimental name.
_GRADUATED = re.compile(
    r"'(?P<owner>[A-Za-z_][\w.]*)' object has no attribute '(?P<attr>experimental_\w+?|\w+?_v\d+)'"
)


def graduated_api_facts(lines: Sequence[str]) -> dict[str, str]:
    """`graduated_api` (the experimental or versioned name an object lacks), `graduated_owner` and
    `graduated_name` (the name without `experimental_` and the `_vN` suffix, the stable API it became)."""
    for m in _matches_from_end(lines[-MAX_LINES:], (_GRADUATED,)):
        stable = re.sub(r"_v\d+$", "", m["attr"].removeprefix("experimental_"))
        if not stable or stable == m["attr"]:
            continue
        return {"graduated_api": m["attr"], "graduated_owner": m["owner"], "graduated_name": stable}
    return {}


def missing_api_facts(lines: Sequence[str]) -> dict[str, str]:
    """`missing_api` (module.attribute) and `missing_api_package` (the top-level package to upgrade or pin)
    where Python says a module has no such attribute."""
    for m in _matches_from_end(lines[-MAX_LINES:], (_NO_ATTRIBUTE,)):
        return {"missing_api": f"{m['module']}.{m['attr']}", "missing_api_package": m["module"].split(".")[0]}
    return {}


# A library's own report that importing a name from a package failed ("Trainer failed to import syncfree
# AdamW from torch_xla.", "Unable to import `Mesh` from flax.linen"): unlike Python's "cannot import name"
# it does not say why, so the package may be missing, too old or too new, or unable to load.
_FAILED_IMPORT = re.compile(
    r"\b(?i:failed|unable|could not|couldn't) to import (?:the )?[`'\"]?(?P<name>[A-Za-z_][\w.]*"
    r"(?: [A-Za-z_][\w.]*){0,2}?)[`'\"]? from [`'\"]?(?P<package>[a-z_][a-z0-9_]*(?:\.[a-z0-9_]+)*)"
    # the package ends the clause: "from the staging bucket" names no package
    r"[`'\"]?(?=[.,;:)]?\s*$|[.,;:)]\s)"
)


def failed_import_facts(lines: Sequence[str]) -> dict[str, str]:
    """`failed_import` (the name) and `failed_import_package` (the top-level package to install, upgrade or
    pin) where a library reports that it could not import a name from a package; an error line only."""
    for m in _matches_from_end(_not_source(lines[-MAX_LINES:]), (_FAILED_IMPORT,)):
        return {"failed_import": m["name"], "failed_import_package": m["package"].split(".")[0]}
    return {}


# TensorFlow 1 names that TensorFlow 2 dropped from its namespaces and keeps under tf.compat.v1 (the renames
# tf_upgrade_v2 makes, https://www.tensorflow.org/guide/migrate/upgrade): the submodule ('' for the top
# level) and the names. tf.contrib is not here: it has no compat.v1 home.
_TF1_ONLY: dict[str, frozenset[str]] = {
    "": frozenset(
        {
            "AUTO_REUSE",
            "ConfigProto",
            "GPUOptions",
            "GraphKeys",
            "GraphOptions",
            "InteractiveSession",
            "OptimizerOptions",
            "Print",
            "RunMetadata",
            "RunOptions",
            "Session",
            "add_to_collection",
            "app",
            "flags",
            "get_collection",
            "get_default_graph",
            "get_default_session",
            "get_variable",
            "gfile",
            "global_variables",
            "global_variables_initializer",
            "initialize_all_variables",
            "layers",
            "local_variables_initializer",
            "logging",
            "placeholder",
            "placeholder_with_default",
            "python_io",
            "reset_default_graph",
            "set_random_seed",
            "sparse_placeholder",
            "tables_initializer",
            "to_float",
            "to_int32",
            "to_int64",
            "trainable_variables",
            "variable_scope",
            "variables_initializer",
        }
    ),
    "train": frozenset(
        {
            "AdagradOptimizer",
            "AdamOptimizer",
            "GradientDescentOptimizer",
            "MomentumOptimizer",
            "MonitoredTrainingSession",
            "RMSPropOptimizer",
            "Saver",
            "get_or_create_global_step",
        }
    ),
    "nn": frozenset({"rnn_cell"}),
}
# module 'tensorflow' / 'tensorflow._api.v2.train' / 'tensorflow.compat.v2.nn' has no attribute 'X'
_TF_MODULE = re.compile(r"^tensorflow(?:\.(?:_api\.v2|compat\.v2))?(?:\.(?P<sub>\w+))?$")


def tf1_api_facts(lines: Sequence[str]) -> dict[str, str]:
    """`tf1_api` (the name the code called) and `tf1_compat_api` (where TensorFlow 2 keeps it) when the
    installed TensorFlow lacks a TensorFlow 1 name: TF1 code run under TF2."""
    for m in _matches_from_end(lines[-MAX_LINES:], (_NO_ATTRIBUTE,)):
        module = _TF_MODULE.match(m["module"])
        if module is None:
            return {}
        sub = module["sub"] or ""
        if m["attr"] not in _TF1_ONLY.get(sub, frozenset()):
            return {}
        path = f"{sub}.{m['attr']}" if sub else m["attr"]
        return {"tf1_api": f"tf.{path}", "tf1_compat_api": f"tf.compat.v1.{path}"}
    return {}


_ALREADY = re.compile(
    r"\b(?:already (?:been )?(?:initiali[sz]ed|started|created|set up|running)|"
    r"must be called before|cannot be called after|called after .{0,40}initiali[sz])",
    re.IGNORECASE,
)
_FRAME = re.compile(r'File "(?P<file>[^"]+)", line \d+, in (?P<func>[\w.<>]+)')


def init_order_facts(lines: Sequence[str]) -> dict[str, str]:
    """`late_call`: the library function that raised an "already initialized" / "must be called before"
    error (the innermost frame above it), so the fix can say which call to move before the runtime starts."""
    tail = lines[-MAX_LINES:]
    for index in range(len(tail) - 1, -1, -1):
        if not _ALREADY.search(tail[index]) or tail[index].lstrip().startswith("File "):
            continue
        for line in reversed(tail[max(0, index - 12) : index]):
            frame = _FRAME.search(line)
            if frame is not None and frame["func"] not in {"<module>", "wrapper", "inner"}:
                return {"late_call": frame["func"]}
        return {}
    return {}


# "Number of devices 4 must be >= the product of mesh_shape (1, 8)", "must equal the product of mesh_shape",
# "Insufficient devices for 2D mesh: found 1, expected 8"
_MESH_DEVICES = (
    re.compile(
        r"Number of devices (?P<have>\d+) must (?:be >=|equal|be equal to) the product of mesh_shape "
        r"\((?P<shape>[\d, ]+)\)"
    ),
    re.compile(r"[Ii]nsufficient devices for .{0,20}mesh: found (?P<have>\d+), expected (?P<want>\d+)"),
    # Mesh TensorFlow (mesh_tensorflow/simd_mesh_impl.py) laying a logical mesh on the TPU's physical one, in
    # its log line and its error: "logical_shape=[128] physical_shape=[2, 2, 2]", either order.
    re.compile(r"\blogical_shape=\[(?P<want_shape>[\d, ]+)\],? physical_shape=\[(?P<have_shape>[\d, ]+)\]"),
    re.compile(r"\bphysical_shape=\[(?P<have_shape>[\d, ]+)\],? logical_shape=\[(?P<want_shape>[\d, ]+)\]"),
)


def _product(dims: str) -> int:
    total = 1
    for dim in re.findall(r"\d+", dims):
        total *= int(dim)
    return total


def mesh_device_facts(lines: Sequence[str]) -> dict[str, int | str | list[str]]:
    """`visible_devices` and `mesh_devices` where a mesh asks for more (or other) devices than are visible;
    `mesh_layout` (`logical [128] on physical [2, 2, 2]`) where the two meshes are printed as shapes."""
    for m in _matches_from_end(lines[-MAX_LINES:], _MESH_DEVICES):
        groups = m.groupdict()
        if groups.get("have_shape") and groups.get("want_shape"):
            have, want = _product(groups["have_shape"]), _product(groups["want_shape"])
            if have == want:
                continue  # the layout fits; an earlier line may hold the one that did not
            return {
                "visible_devices": have,
                "mesh_devices": want,
                "mesh_layout": f"logical [{groups['want_shape']}] on physical [{groups['have_shape']}]",
                "mesh_layout_lines": [m.string.strip()],
            }
        want = _product(groups["shape"]) if groups.get("shape") else int(groups["want"])
        return {"visible_devices": int(m["have"]), "mesh_devices": want}
    return {}


# A fixed number of devices a program asked for against the devices the runtime has (diag80): "No 8 TPUs
# available in [TpuDevice(id=0, ...), ...]" (the devices counted in the list printed after it), "Only 4 < 8
# TPUs available", "requires 8 TPU devices but only 4 are available", "(4 < 8)" after "less than required".
# chex's device checks word the first two (chex/_src/asserts.py, https://github.com/google-deepmind/chex).
_DEVICE_KIND = r"(?P<kind>TPU|GPU|CPU)"
_ASKED_DEVICES = (
    re.compile(rf"\bNo (?P<want>\d+) {_DEVICE_KIND}s? (?:devices? )?(?:are )?available in \[(?P<listed>.*)"),
    re.compile(rf"\bOnly (?P<have>\d+) < (?P<want>\d+) {_DEVICE_KIND}s? (?:devices? )?(?:are )?available\b"),
    re.compile(
        r"\b(?:requires?|needs?|requested|asks? for|expected) (?P<want>\d+) (?:(?P<kind>TPU|GPU) )?"
        r"(?:devices|chips|TPUs|GPUs)\b[^.\n]{0,40}?\b(?:but |while |and )?(?:only )?(?P<have>\d+) "
        r"(?:are |were |is )?(?:available|found|visible|present)\b",
        re.IGNORECASE,
    ),
    re.compile(r"\bavailable devices is less than required\b[^()\n]{0,40}\((?P<have>\d+) < (?P<want>\d+)\)"),
)
# one device in a printed list: TpuDevice(id=0, ...), CpuDevice(id=0), cuda:0-style names are not counted
_LISTED_DEVICE = re.compile(r"\b(?P<kind>Tpu|Gpu|Cpu|Cuda|Rocm)Device\(id=\d+")


def device_count_facts(lines: Sequence[str]) -> dict[str, int | str]:
    """`asked_devices` and `found_devices` (`device_kind` when named) where a program asked for a fixed number
    of devices and the runtime has another: a count written for another host (a v3-8 shows 8 devices, a
    v4-8 4). A printed list is counted only when it lists devices of the kind asked for: CPU devices listed
    where TPUs were asked mean no TPU backend at all, which other facts cover."""
    for m in _matches_from_end(lines[-MAX_LINES:], _ASKED_DEVICES):
        groups = m.groupdict()
        kind = (groups.get("kind") or "").upper()
        if groups.get("listed") is not None:
            listed = [d.upper() for d in _LISTED_DEVICE.findall(groups["listed"])]
            if not listed or (kind and any(d != kind for d in listed)):
                return {}
            have = len(listed)
        else:
            have = int(groups["have"])
        want = int(groups["want"])
        if have == want or have < 1:
            return {}
        out: dict[str, int | str] = {"asked_devices": want, "found_devices": have}
        if kind:
            out["device_kind"] = kind
        return out
    return {}


# "got (1041,) and (1029,)", "expected 5242880 but got 1638400", "(37) must match the size of tensor b (38)"
_SIZE_PAIR = (
    re.compile(r"\bgot (?P<a>\([\d, ]+\)|\[[\d, ]+\]|\d+) and (?P<b>\([\d, ]+\)|\[[\d, ]+\]|\d+)"),
    re.compile(
        r"\bexpected (?:size |shape )?(?P<a>[\w\[\](), ]{1,60}?) but got "
        r"(?:size |shape )?(?P<b>[\w\[\](), ]{1,60})"
    ),
    re.compile(r"\((?P<a>\d+)\) must match the size of tensor \w+ \((?P<b>\d+)\)"),
    # XLA: "expected parameter 7 of size 5242880 (bf16[...]) but got buffer with incompatible size 1638400"
    re.compile(r"\bof size (?P<a>\d+) .{0,160}?\bincompatible size (?P<b>\d+)"),
)


def size_mismatch_facts(lines: Sequence[str]) -> dict[str, str]:
    """`mismatch_sizes` (`(1041,) vs (1029,)`) where a shape error states the two sizes that differ."""
    for m in _matches_from_end(_not_source(lines), _SIZE_PAIR):
        if m["a"].strip() != m["b"].strip():
            return {"mismatch_sizes": f"{m['a'].strip()} vs {m['b'].strip()}"}
    return {}


# A setting that may apply to one of two scopes but not both: "Expert parallelism can only be enabled on ICI
# or DCN on TPU, not both" (MaxText's config checks), "X may only be set for A or B, not both".
_EXCLUSIVE_SCOPE = re.compile(
    r"(?P<feature>[A-Za-z][\w -]{0,40}?) (?:can|may) only be (?:enabled|set|used|turned on) "
    r"(?:on|for|in|with|over) (?:the )?(?P<a>\w+) or (?:the )?(?P<b>\w+)\b[^\n]{0,60}?\bnot both\b",
    re.IGNORECASE,
)


def exclusive_scope_facts(lines: Sequence[str]) -> dict[str, str | list[str]]:
    """`exclusive_feature`, `exclusive_a`, `exclusive_b` where a check allows a setting on one of two scopes
    but not both; for a parallelism, also `exclusive_setting_a`/`_b`, the per-scope setting names in the
    `<scope>_<kind>_parallelism` form (MaxText's `ici_expert_parallelism`, `dcn_expert_parallelism`), so the
    fix names the two settings to reconcile; `exclusive_feature_lines` keeps the line for the evidence."""
    for m in _matches_from_end(_not_source(lines), (_EXCLUSIVE_SCOPE,)):
        feature = m["feature"].strip()
        facts: dict[str, str | list[str]] = {
            "exclusive_feature": feature,
            "exclusive_a": m["a"],
            "exclusive_b": m["b"],
            "exclusive_feature_lines": [m.string.strip()],
        }
        words = re.findall(r"[a-z0-9]+", feature.lower())
        if len(words) >= 2 and words[-1] == "parallelism":
            kind = "_".join(words[-2:])
            facts["exclusive_setting_a"] = f"{m['a'].lower()}_{kind}"
            facts["exclusive_setting_b"] = f"{m['b'].lower()}_{kind}"
        return facts
    return {}


# The program's own progress lines: which phase was running when it died.
_PHASE = re.compile(
    r"(?<![/_.\w])(?P<phase>evaluat\w*|eval(?:uation)?|validat\w*|predict\w*|inference|generat\w*|train\w*|"
    r"sav\w+ checkpoint\w*|load\w* (?:checkpoint|weights|model)\w*|restor\w*|compil\w*|warm[- ]?up)"
    r"\b(?![/_.])"
    r"[^\n]{0,40}?(?:\[\s*\d+\s*/\s*\d+\s*\]|\bstep\b|\bepoch\b|\d+\s*/\s*\d+|\.\.\.|:)",
    re.IGNORECASE,
)
_FATAL = re.compile(
    r"terminate called|std::bad_alloc|Traceback \(most recent call last\)|^\s*(?:Aborted|Killed)\b|"
    r"\b(?:Error|Exception):|RESOURCE_EXHAUSTED|Check failed|Fatal Python error|SIGKILL|SIGABRT|SIGSEGV",
)


_ERRORISH = re.compile(r"(?i)\b(?:error|exception|failed|failure|fatal|warning)\b")


def crash_phase_facts(lines: Sequence[str]) -> dict[str, str]:
    """`crash_phase` (and `phase_line`): the program's last progress line before the first fatal line, so
    a fix can tell an OOM while evaluating from one while loading weights."""
    tail = lines[-MAX_LINES:]
    first_fatal = next((i for i, line in enumerate(tail) if _FATAL.search(line)), None)
    if first_fatal is None:
        return {}
    for line in reversed(tail[max(0, first_fatal - 20) : first_fatal]):
        if _ERRORISH.search(line):
            continue  # an earlier error line, not the program's progress
        m = _PHASE.search(line)
        if m is not None:
            phase = m["phase"].lower()
            for stem, name in (
                ("eval", "evaluation"),
                ("valid", "validation"),
                ("predict", "prediction"),
                ("generat", "generation"),
                ("train", "training"),
                ("sav", "checkpoint saving"),
                ("load", "weight loading"),
                ("restor", "checkpoint restoring"),
                ("compil", "compilation"),
                ("warm", "warm-up"),
            ):
                if phase.startswith(stem):
                    phase = name
                    break
            return {"crash_phase": phase, "phase_line": line.strip()[:160]}
    return {}


# Every extractor above, in the order derive_facts applies them: adding an extractor here is all it takes
# for the crash rules' fixes to see its facts.
SETTING_EXTRACTORS: tuple[Callable[[Sequence[str]], Mapping[str, object]], ...] = (
    size_setting_facts,
    refused_env_facts,
    rejected_flag_facts,
    accepted_value_facts,
    missing_api_facts,
    failed_import_facts,
    tf1_api_facts,
    graduated_api_facts,
    init_order_facts,
    mesh_device_facts,
    device_count_facts,
    size_mismatch_facts,
    exclusive_scope_facts,
    crash_phase_facts,
    *CALL_EXTRACTORS,
)
