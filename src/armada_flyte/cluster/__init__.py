"""The cluster pods run in, for the embedded server and `armada-flyte executor` alike: the cluster file
(nodes, node groups, images), its Secrets and ingress, and Armada's executor rules (error categories, pod metadata)."""
