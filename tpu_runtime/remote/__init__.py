"""Commands on a user's TPU VMs or GKE cluster, only after the person approves them.

The pieces, each in its own module: `targets` (the user's config file), `tpu_api` (worker addresses and
host keys from the Cloud TPU API), `spec` (what will run where, and its digest), `wrap` (the remote shell
wrapper that makes cancel real), `store` + `audit` (SQLite state and the hash-chained log), `approvals`
(requests, decisions, single-use approvals), `policy` (read-only commands that need no prompt), `ssh_exec`
(asyncssh fan-out), `worker_gate` (the last check on each worker, and the wrapper it rebuilds), `shown`
(request fields made safe to show), `gke` (Job/JobSet manifests), `loops` (budgeted attempts) and
`engine` (the API the CLI and MCP front ends call). Nothing here imports asyncssh or google-cloud-tpu
at import time.
"""
