"""The gRPC services: Armada's Submit, QueueService, Jobs, Event, Node, Binoculars and SchedulerReporting APIs.

Thin: each call authenticates, names its requestor, and hands the request to the control plane.
"""
