"""`armada-flyte node-agent`: the pod runner as the kubelet of a real Kubernetes API server's nodes.

It registers the cluster file's nodes with the API server the kubeconfig names, runs the pods bound to
them with the pod runner, reports their status as a kubelet does, and serves their logs on the kubelet
endpoint (HTTPS, for the API server's client certificate only), until Ctrl-C or SIGTERM.
"""

from __future__ import annotations

import argparse
import logging
import pathlib
from typing import Any

from armada_flyte.admin.until_stopped import run_until_stopped
from armada_flyte.errors import InvalidConfig
from armada_flyte.pod_runner import POD_RUNNER_KINDS

DEFAULT_CLIENT_NAME = "kube-apiserver-kubelet-client"
"""The common name of the API server's kubelet client certificate (what kubeadm names it too)."""


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "node-agent",
        help="be the kubelet of a Kubernetes API server's nodes: run the pods bound to them on this machine",
        description=(
            "Register the cluster file's nodes (labels, taints, allocatable, Ready) with a Kubernetes API server, "
            "run the pods kube-scheduler binds to them with the pod runner, report their status as a kubelet does, "
            "finish their deletions, and serve their container logs to the API server (kubectl logs, Armada's "
            "Binoculars). Stops on Ctrl-C or SIGTERM."
        ),
    )
    parser.add_argument(
        "--kubeconfig", required=True, metavar="FILE", help="how the agent reaches and logs in to the API server"
    )
    parser.add_argument(
        "--cluster", metavar="FILE", help="cluster YAML describing node sets (default: amd64 + tainted arm64)"
    )
    parser.add_argument(
        "--pod-runner", choices=POD_RUNNER_KINDS, default="process", help="how pods run (default process)"
    )
    parser.add_argument(
        "--listen",
        default="127.0.0.1:10250",
        metavar="HOST:PORT",
        help="the kubelet endpoint the API server reads logs from (default 127.0.0.1:10250)",
    )
    parser.add_argument("--tls-cert", required=True, metavar="PEM", help="the kubelet endpoint's certificate")
    parser.add_argument("--tls-key", required=True, metavar="PEM", help="its private key")
    parser.add_argument(
        "--client-ca", required=True, metavar="PEM", help="the authority of the API server's kubelet client certificate"
    )
    parser.add_argument(
        "--client-name",
        action="append",
        metavar="NAME",
        help=f"common name a client certificate must have (repeatable; default {DEFAULT_CLIENT_NAME})",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    host, port = _listen(args.listen)
    from armada_flyte.cluster.cluster_file import Cluster
    from armada_flyte.node_agent.agent import AgentSettings, NodeAgent
    from armada_flyte.node_agent.kube_api import KubeApi
    from armada_flyte.node_agent.kubeconfig import read_kubeconfig
    from armada_flyte.node_agent.kubelet_endpoint import EndpointTls, KubeletEndpoint
    from armada_flyte.pod_runner import make_pod_runner

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    login = read_kubeconfig(args.kubeconfig)
    cluster = Cluster.from_yaml(args.cluster) if args.cluster else Cluster.default()
    tls = EndpointTls(
        pathlib.Path(args.tls_cert),
        pathlib.Path(args.tls_key),
        pathlib.Path(args.client_ca),
        tuple(args.client_name or [DEFAULT_CLIENT_NAME]),
    )
    agent: Any = None
    endpoint = KubeletEndpoint(host, port, tls, lambda ns, pod, container: agent.pod_log(ns, pod, container))
    options = {"images": cluster.images, "cpu_shares": cluster.cpu_shares} if args.pod_runner == "process" else {}
    runner = make_pod_runner(args.pod_runner, **options)
    agent = NodeAgent(KubeApi(login), cluster, runner, AgentSettings(kubelet_port=endpoint.port))
    print(
        f"node agent for {login.server}: kubelet endpoint https://{host}:{endpoint.port}; pods run as {args.pod_runner}"
    )
    print("nodes:")
    for node_set in cluster.node_sets:
        print(f"  {node_set.describe()}")
    print("Press Ctrl-C to stop.", flush=True)
    endpoint.start()
    try:
        return run_until_stopped(agent, "node agent")
    finally:
        endpoint.stop()


def _listen(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    if not host or not port.isdigit() or int(port) > 65535:
        raise InvalidConfig("--listen", text, "give the kubelet endpoint as HOST:PORT, e.g. 127.0.0.1:10250")
    return host, int(port)
