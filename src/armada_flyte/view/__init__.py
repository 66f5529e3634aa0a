"""The local view: a page on 127.0.0.1 showing an Armada's queues, job sets, jobs and a timeline per node.

It reads Armada only through the APIs Armada users have (Submit's queues, Event's job set streams,
Jobs' details and errors, Binoculars' logs, SchedulerReporting's reports), so it works against the
embedded server and a real Armada alike. `jobs` and `pages` are pure (data in, rows and HTML out);
`armada_reader` does the gRPC; `http_server` serves the pages with the standard library.
"""
