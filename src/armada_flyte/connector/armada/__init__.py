"""Armada access: every gRPC call the connector makes (`api`), the request items a job becomes,
call batching, channels and credentials. Above the configuration and the plain types; nothing here
decides what a job looks like or what a poll answers."""
