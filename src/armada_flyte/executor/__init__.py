"""An Armada executor of our own: real Armada's scheduler places runs on the cluster file's nodes,
and their pods run on this machine through the pod runner (`armada-flyte executor`).

Layers, bottom up: `stubs` (the generated executor API); the pure conversions `cluster_nodes`
(cluster -> node report), `leases` (lease -> pod), `run_events` (pod news -> Armada events) and
`held_runs` (the run table and outbox), `scheduler_connection` (the transport and credentials the
command's options choose); then `lease_loop`, the only module that talks to the scheduler. The stubs
are a build product: importing any module here fails with `ExecutorStubsMissing` until
scripts/build-executor-stubs.sh has run.
"""
