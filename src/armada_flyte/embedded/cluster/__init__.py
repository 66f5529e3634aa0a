"""The cluster description: its nodes, error categories, Secrets and ingress, read from the cluster file."""
