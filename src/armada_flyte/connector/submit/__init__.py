"""The submit side: what a task template becomes on Armada. `plan.plan_job` is the one pure pass
(decisions kept per template, the namespace, each step's job built whole by `pod.job_request`);
placement, accelerators, secrets and the execution context are its pure parts; `image_check` asks an
image's registry and `gangs` remembers a gang's architecture, for the service. Independent of the
poll side."""
