"""gRPC messages of Armada services that armada_client does not ship.

The `.proto` files here are written from Armada's API (same package, service, method names and
field numbers, so they are wire-compatible); their Python stubs are generated when the package
is built or installed (see setup.py), never committed.
"""
