"""The node agent: the pod runner as a kubelet of a real Kubernetes API server.

It registers the cluster file's nodes with the API server, watches the pods bound to them (kube-scheduler
binds them), runs each with the pod runner (process or docker), and reports what a kubelet reports: the
pod's phase, container states, exit codes, reasons and times; it finishes deletions, reads Secrets from the
API server, and serves container logs on the kubelet endpoint, where the API server reads them for
`kubectl logs` and Armada's Binoculars. Armada's own executor then runs on that API server as on any cluster.

Pure decisions (what a pod event asks of the node, the statuses, the node objects, the log text) sit apart
from the I/O (the API client, the watch, the log endpoint, the agent's loop).
"""
