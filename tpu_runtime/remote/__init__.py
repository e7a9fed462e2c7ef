"""Commands on a user's TPU VMs, GKE cluster or Ray cluster, only after the person approves them.

The pieces, each in its own module: `targets` (the user's config file), `tpu_api` (worker addresses and
host keys from the Cloud TPU API), `spec` (what will run where, and its digest), `wrap` (the remote shell
wrapper that makes cancel real), `store` + `audit` (SQLite state and the hash-chained log), `approvals`
(requests, decisions, single-use approvals), `policy` (read-only commands that need no prompt), `ssh_exec`
(asyncssh fan-out), `worker_gate` (the last check on each worker, and the wrapper it rebuilds), `shown`
(request fields made safe to show), `gke` (Job/JobSet manifests), `ray_jobs` (Ray job submissions and
Ray's job client), `ray_launch` (the launcher a multi-host Ray job runs), `loops` (budgeted attempts) and
`engine` (the API the CLI and MCP front ends call). Nothing here imports asyncssh, google-cloud-tpu or
ray at import time.
"""
