"""`tpu-agent diagnose`: what failed or where time went, from crash logs, profiles, traces and XLA dumps.

Each input kind has its own reader here (`crashlog`, `torch_trace`, `xla_dump`, `metrics`; XProf profiles
in `profile`); `detect` decides which one a path is, and `job.run_diagnose` runs them into one
`report.DiagnoseReport`.
"""
