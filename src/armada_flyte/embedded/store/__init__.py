"""The job store: jobs and runs, their index, their rows on disk, the event log and the queues."""
