"""The poll side: what a task's jobs tell Flyte. `decision.decide` is the one pure function from what
is known of a task's jobs to Flyte's answer and the actions to take (its last row, one job's answer,
is `outcome.outcome_of`; a preference's rows are `spill`); `gather` fetches what it asks for, through
the status view (event streams and bulk status calls), Armada's API, the blob store (a0's error file)
and the scheduler's reports. Independent of the submit side."""
