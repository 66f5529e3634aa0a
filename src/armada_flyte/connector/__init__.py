"""The connector side: what runs in the `c0` connector service (and in-process for local runs).

It turns a task template into an Armada job, submits, polls and cancels it. It never imports the
task side, the embedded server, local runs or admin tools.
"""
