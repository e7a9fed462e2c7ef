"""What an XProf profile says about a TPU run, as a summary small enough for an agent's context.

`analyze_profile(path, top)` reads the profile plane by plane (`xspace.read_planes`) and keeps only
aggregates. The definitions follow xprof's own converters, so the numbers agree with its tools
(checked in tests/test_profile.py against `xprof.convert.raw_to_tool_data.xspace_to_tool_data`):

- op time: events on each TensorCore plane's "XLA Ops" line; an op's self time is its duration less
  the durations of the ops nested inside it; ops are keyed by (program id, HLO op name) across cores.
- device busy/idle ("duty cycle"): per chip, the union of the op intervals that are not off-duty
  (infeed, outfeed, host send/recv, megacore fusion), against the span from the first to the last
  op or module event; chips are summed (xprof: xplane_to_op_stats.cc, DutyCycleTracker).
- program time (roofline denominator): per core, first op start to last op end, summed over cores.
- peaks: the device plane's `peak_teraflops_per_second` and `peak_hbm_bw_gigabytes_per_second`
  stats; else the chip table (knowledge/chips.yaml). Ridge point = peak FLOP/s / peak HBM byte/s.
- MXU utilisation: the host plane's `matrix_unit_utilization_percent` stat, when the profile has it.
- device time by class (`time_breakdown`), the way XProf's step-time breakdown splits a step: every
  op's self time goes to compute or HBM-bound ops (its roofline verdict), collectives (all-reduce,
  all-gather, reduce-scatter, collective-permute, send/recv and their async halves) or host transfers
  (infeed/outfeed, host send/recv, async copies whose layout names host memory `S(5)`); the duty-cycle
  idle is the time spent waiting on the host. The verdict is the class with the largest share. The
  class sums equal op_profile's per-category times; the split itself is ours (xprof finds no steps in
  a profile without step markers and then gives no breakdown).
- async pairs: a done op (copy-done, all-reduce-done, send-done, ...) names its start op as operand;
  the pair is one transfer, so the start's time is added to the done op and the bytes are counted once
  (op_profile puts them on one half or the other). A byte rate above the chip's peak HBM bandwidth
  cannot be a measurement (the op's time holds only part of the transfer): it is dropped with a note.

Not computed by xprof, so derived here: the step count and step times when there is no Steps line
(each run of the busiest XLA module, start to start; the count is of one core, since all chips of a
host and all hosts of a job run the same steps), the profile length (the Task Environment's start
and stop stamps, else the host events' span) and the host-event self times (as for ops).

Sources: https://github.com/openxla/xprof (xprof/convert/xplane_to_op_stats.cc,
xplane_to_op_metrics_db.cc) and https://github.com/openxla/xla (xla/tsl/profiler/convert/xla_op_utils.h).
A profile without TPU device planes (a GPU or CPU-only capture) gets a host-side summary and a note,
never TPU numbers.

The work is split by concern: `profile_planes` folds each plane into aggregates (with the interval
arithmetic of `profile_lists` for small profiles, of `profile_intervals` with numpy for large ones),
`profile_summary` turns them into the report, and `profile_compare` compares two summaries.
"""

from __future__ import annotations

from pathlib import Path

from tpu_runtime.diagnose.profile_model import ProfileSummary
from tpu_runtime.diagnose.profile_planes import ops_for
from tpu_runtime.diagnose.profile_summary import ProfileAnalyzer
from tpu_runtime.diagnose.xspace import read_planes


def analyze_profile(path: Path, top: int = 10) -> ProfileSummary:
    """Summarise an `*.xplane.pb` or a profile run folder; raises `xspace.ProfileReadError` on bad input.

    A small profile is folded on Python lists and a large one with numpy (`profile_planes.ops_for`)."""
    if top < 1:
        raise ValueError(f"top must be at least 1, got {top}")
    analyzer = ProfileAnalyzer(top, ops_for(path))
    for plane in read_planes(path):
        analyzer.consume(plane)
    return analyzer.summary(path)
