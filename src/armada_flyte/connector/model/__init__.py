"""The connector's plain types, at the bottom of its layers: a job request, a run's identity and
details, the metadata Flyte persists, the error a0 wrote. Values only; nothing here does I/O or
imports the rest of the connector."""
