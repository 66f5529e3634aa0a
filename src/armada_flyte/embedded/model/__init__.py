"""Plain types at the bottom of the embedded server: what a request item says of its job, and refusals."""
