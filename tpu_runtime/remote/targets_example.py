"""The documented targets file, with no imports: `targets --help` shows it without loading pydantic."""

from __future__ import annotations

#: One entry of each kind, as the person writes them in targets.yaml; a test loads it with `TargetsFile`.
TARGETS_EXAMPLE = """\
targets:
  my-v6e:                          # a Cloud TPU VM, by node name
    kind: tpu-vm
    project: my-project
    zone: us-east5-b
    name: my-v6e-8
    identity_file: ~/.ssh/google_compute_engine
  my-qr:                           # the nodes of a queued resource
    kind: tpu-vm
    project: my-project
    zone: us-east5-b
    queued_resource: my-queued-resource
    internal_ip: true              # from inside the VPC
  lab:                             # plain SSH hosts; host keys pinned here or in a known_hosts file
    kind: hosts
    user: alice
    hosts:
      - {name: w0, host: 10.1.0.2, host_key: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIJ1qJ2lW4Xm1bq0Z"}
      - {name: w1, host: 10.1.0.3, port: 2222}
    known_hosts: ~/.ssh/known_hosts
  cluster:                         # a GKE cluster with a TPU node pool
    kind: gke
    context: gke_my-project_us-east5_my-cluster
    namespace: default
    accelerator: tpu-v6e-slice     # node selector cloud.google.com/gke-tpu-accelerator
    topology: 4x4                  # node selector cloud.google.com/gke-tpu-topology
    chips_per_host: 4
    image: us-docker.pkg.dev/my-project/images/trainer:latest
    workload: jobset               # or job (an Indexed Job)
  my-ray:                          # a Ray cluster, through its job-submission (dashboard) address
    kind: ray
    address: http://10.0.0.2:8265
    tpu_chips_per_host: 4          # Ray's `TPU` resource each host's work holds
    tpu_hosts: 4                   # a multi-host slice: one task per host
    tpu_pod_type: v6e-16           # the job starts on the slice's TPU-v6e-16-head host
    runtime_env: {pip: [jax], env_vars: {JAX_PLATFORMS: tpu}}
    auth_token_env: RAY_JOB_TOKEN  # sent as a bearer token; the value is never stored
"""
