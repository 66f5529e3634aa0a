"""The read-only Kubernetes API of the embedded cluster: its nodes, namespaces, pods and Services."""
