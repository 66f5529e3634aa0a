"""Admin tools: the `armada-flyte` command line (dev, doctor, dry-run, image). Imported by nothing
but the console script."""
