"""Armada's server rules: what a submission must satisfy, the job-set rules, the defaults it fills in."""
