"""How Armada retries a run that ended for a system reason, with its default config.

The scheduler requeues a job whose lease was returned while it has had fewer than
`maxRetries + 1` attempted runs (maxRetries is 3 in config/scheduler/config.yaml; the + 1 is in
internal/scheduler/schedulerapp.go); after that the job fails with the message below
(internal/scheduler/scheduler.go).
"""

from __future__ import annotations

MAX_ATTEMPTED_RUNS = 3 + 1
POD_MISSING = "Pod is unexpectedly missing in Kubernetes"
"""What Armada's executor reports for a pod of an active run that is gone (pod_issue_handler.go)."""


def give_up_message(last_error: str) -> str:
    message = f"Maximum number of attempts ({MAX_ATTEMPTED_RUNS}) reached - this job will no longer be retried"
    return f"{message}\n\nFinal run error:\n{last_error}" if last_error else message
