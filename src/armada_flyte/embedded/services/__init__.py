"""The gRPC services: Armada's Submit, QueueService, Jobs, Event, Node, Binoculars and SchedulerReporting APIs.

Thin: each call names its requestor (the user the call authenticated) and hands the request to the control plane.
"""
