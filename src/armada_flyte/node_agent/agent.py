"""The node agent's loop: register the nodes, watch their pods, run them, report, finish deletions.

It carries out what the pure modules decide (`pod_decisions.next_step`, `pod_status.pod_status`, the node
objects) with the API client, and is the pod runner's `RunReporter`: the runner's pending / running /
finished move the pod's progress forward, and a writer thread sends the latest status of each pod that
changed, in the order they changed. A pod whose Secrets are missing waits (CreateContainerConfigError) and
is tried again every `retry_interval`, as a kubelet retries. Each node's Lease is renewed every
`heartbeat_interval` and its status (Ready, heartbeat times) every few renewals.
"""

from __future__ import annotations

import datetime
import logging
import threading
import time
from dataclasses import dataclass, replace
from typing import Any, Optional

from armada_flyte.cluster.cluster_file import Cluster, Node
from armada_flyte.cluster.secrets import WAITING_REASON, SecretUnavailable
from armada_flyte.node_agent import node_objects
from armada_flyte.node_agent.kube_api import KubeApi, KubeApiError, pod_path
from armada_flyte.node_agent.pod_decisions import LOST_MESSAGE, LOST_REASON, Known, Step, grace_seconds, next_step
from armada_flyte.node_agent.pod_secrets import read_pod_secrets
from armada_flyte.node_agent.pod_spec import pod_spec_message
from armada_flyte.node_agent.pod_status import Phase, PodProgress, advanced, ended_phase, pod_status
from armada_flyte.pod_runner import ContainerEnd, PodEnd, PodLaunch, PodLog, PodRunner

log = logging.getLogger(__name__)

JOB_ID_LABEL = "armada_job_id"
"""The label Armada's executor puts the job id in (a pod of someone else's is named by its pod name)."""
STOPPED_MESSAGE = "the node agent stopped while the pod ran"
STOPPED_REASON = "NodeAgentStopped"


@dataclass(frozen=True)
class AgentSettings:
    kubelet_port: int
    """The kubelet endpoint's port, which the node objects name (where the API server reads logs)."""
    heartbeat_interval: float = 10.0
    status_every: int = 6
    """Node status (heartbeat times) every this many Lease renewals."""
    retry_interval: float = 5.0
    watch_seconds: int = 60


@dataclass
class HeldPod:
    uid: str
    namespace: str
    name: str
    node: Node
    spec: dict[str, Any]
    log: PodLog
    progress: PodProgress
    launched: bool = False
    stopping: bool = False
    deleting: bool = False


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.timezone.utc)


class NodeAgent:
    """Serves `cluster`'s nodes on the API server `api` reaches, running their pods with `runner`, until `stop()`."""

    def __init__(self, api: KubeApi, cluster: Cluster, runner: PodRunner, settings: AgentSettings):
        self.api = api
        self.cluster = cluster
        self.runner = runner
        self.settings = settings
        self.nodes = {node.name: node for node in cluster.nodes}
        self._pods: dict[str, HeldPod] = {}
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._dirty: list[str] = []
        self._dirty_changed = threading.Condition(self._lock)
        self._started = _now()
        self._shutting_down = False
        self.registered = threading.Event()
        """Set once every node is registered (and Ready)."""

    # --- running ---

    def run(self) -> None:
        """Register the nodes, then watch and run pods until `stop()`; then stop the pods and report them."""
        self.register_nodes()
        threads = [
            threading.Thread(target=self._write_statuses, name="pod-status-writer", daemon=True),
            threading.Thread(target=self._heartbeat, name="node-heartbeat", daemon=True),
        ]
        for thread in threads:
            thread.start()
        try:
            self._watch_pods()
        finally:
            self._shut_down()
            with self._lock:
                self._dirty_changed.notify_all()
            for thread in threads:
                thread.join(timeout=30)

    def stop(self) -> None:
        self._stopping.set()
        self.api.end_watches()

    def register_nodes(self) -> None:
        for node in self.nodes.values():
            path = f"/api/v1/nodes/{node.name}"
            try:
                self.api.create("/api/v1/nodes", node_objects.node_object(node))
            except KubeApiError as exc:
                if exc.code != 409:
                    raise
                metadata = {"labels": node_objects.node_labels(node)}
                self.api.merge_patch(path, {"metadata": metadata, "spec": node_objects.node_spec(node)})
            self._post_node_status(node)
            self._renew_lease(node)
            log.info("node %s registered (%s)", node.name, node.node_set.describe())
        self.registered.set()

    def _post_node_status(self, node: Node) -> None:
        status = node_objects.node_status(node, self.settings.kubelet_port, _now(), self._started)
        self.api.merge_patch(f"/api/v1/nodes/{node.name}/status", {"status": status})

    def _renew_lease(self, node: Node) -> None:
        lease = node_objects.node_lease(node, _now())
        path = f"/apis/coordination.k8s.io/v1/namespaces/{node_objects.NODE_LEASE_NAMESPACE}/leases"
        try:
            self.api.merge_patch(f"{path}/{node.name}", {"spec": lease["spec"]})
        except KubeApiError as exc:
            if exc.code != 404:
                raise
            self.api.create(path, lease)

    def _heartbeat(self) -> None:
        """Every `retry_interval`: pods waiting for a Secret are tried again; every `heartbeat_interval`: each
        node's Lease is renewed (and every `status_every` renewals, its status)."""
        beats, next_beat = 0, time.monotonic() + self.settings.heartbeat_interval
        while not self._stopping.wait(self.settings.retry_interval):
            self._retry_waiting_pods()
            if time.monotonic() < next_beat:
                continue
            beats, next_beat = beats + 1, time.monotonic() + self.settings.heartbeat_interval
            for node in self.nodes.values():
                try:
                    self._renew_lease(node)
                    if beats % self.settings.status_every == 0:
                        self._post_node_status(node)
                except KubeApiError as exc:
                    log.warning("heartbeat of node %s: %s", node.name, exc)

    # --- the watch ---

    def _watch_pods(self) -> None:
        params = {"fieldSelector": "spec.nodeName!="}
        version = ""
        while not self._stopping.is_set():
            try:
                if not version:
                    version = self._list_pods(params)
                for event in self.api.watch("/api/v1/pods", {**params, "resourceVersion": version}, self._watch_time()):
                    if self._stopping.is_set():
                        return
                    kind, pod = event.get("type", ""), event.get("object") or {}
                    if kind == "ERROR":  # 410 Gone: the version is too old; list again
                        version = ""
                        break
                    version = (pod.get("metadata") or {}).get("resourceVersion", version)
                    if kind != "BOOKMARK":
                        self.handle(kind, pod)
            except KubeApiError as exc:
                if self._stopping.is_set():
                    return
                log.warning("watching pods: %s; listing again", exc)
                version = ""
                self._stopping.wait(1.0)

    def _watch_time(self) -> int:
        return self.settings.watch_seconds

    def _list_pods(self, params: dict[str, str]) -> str:
        listed = self.api.get("/api/v1/pods", params)
        seen = set()
        for pod in listed.get("items") or []:
            seen.add((pod.get("metadata") or {}).get("uid"))
            self.handle("SYNC", pod)
        with self._lock:
            gone = [held for uid, held in self._pods.items() if uid not in seen]
        for held in gone:  # deleted while the watch was down
            self._forget(held)
        return (listed.get("metadata") or {}).get("resourceVersion", "")

    def handle(self, event: str, pod: dict[str, Any]) -> None:
        """Carry out what one pod event asks of the node (`pod_decisions.next_step`)."""
        uid = (pod.get("metadata") or {}).get("uid", "")
        with self._lock:
            held = self._pods.get(uid)
            known = None if held is None else Known(uid, held.progress.phase.ended, held.stopping)
        step = next_step(event, pod, self.nodes, known)
        if step is Step.LAUNCH:
            self._launch(pod)
        elif step is Step.STOP and held is not None:
            self._stop_pod(held, grace_seconds(pod))
        elif step is Step.FINISH_DELETION:
            self._finish_deletion(pod["metadata"]["namespace"], pod["metadata"]["name"], uid)
        elif step is Step.REPORT_LOST:
            self._report_lost(pod)
        elif step is Step.FORGET and held is not None:
            self._forget(held)

    # --- launching ---

    def _launch(self, pod: dict[str, Any]) -> None:
        metadata, spec = pod["metadata"], pod.get("spec") or {}
        node = self.nodes[spec["nodeName"]]
        held = HeldPod(
            metadata["uid"],
            metadata["namespace"],
            metadata["name"],
            node,
            spec,
            PodLog(),
            PodProgress(started_at=_now()),
        )
        with self._lock:
            if held.uid in self._pods:
                return
            self._pods[held.uid] = held
        self._try_to_start(held, pod)

    def _try_to_start(self, held: HeldPod, pod: dict[str, Any]) -> None:
        """Resolve the pod's Secrets and hand it to the runner; a missing Secret keeps it waiting, reported."""
        try:
            message = pod_spec_message(held.spec)
            secrets = read_pod_secrets(self.api, held.namespace, message)
        except SecretUnavailable as exc:
            self._progress(held.uid, waiting_reason=WAITING_REASON, waiting_message=str(exc))
            return
        except (KubeApiError, ValueError) as exc:
            self._progress(held.uid, waiting_reason="CreateContainerError", waiting_message=str(exc))
            return
        metadata = pod.get("metadata") or {}
        labels, annotations = metadata.get("labels") or {}, metadata.get("annotations") or {}
        launch = PodLaunch(
            run_id=held.uid,
            job_id=labels.get(JOB_ID_LABEL) or held.name,
            pod_name=held.name,
            namespace=held.namespace,
            node=held.node.name,
            node_set=held.node.node_set.name,
            architecture=held.node.node_set.architecture,
            pod=message,
            log=held.log,
            labels=labels,
            annotations=annotations,
            secrets=secrets,
        )
        with self._lock:
            # Two callers may get here for one pod: the watch's launch, and the retry of waiting pods, which sees
            # it not launched while the first reads its Secrets. One runs it; a second run would share its
            # sandbox (CI: "File exists", the pod failed).
            if held.stopping or held.launched:
                return
            held.launched = True
        self._progress(held.uid, waiting_reason="ContainerCreating", waiting_message="")
        log.info("pod %s/%s on node %s: starting", held.namespace, held.name, held.node.name)
        try:
            self.runner.launch(launch, self)
        except Exception as exc:  # the runner refused it: the pod fails, as a container that can't be created
            log.exception("the pod runner could not start pod %s/%s", held.namespace, held.name)
            self.finished(held.uid, 128, f"the pod runner could not start the pod: {exc}", (), "StartError")

    def _retry_waiting_pods(self) -> None:
        with self._lock:
            waiting = [
                h for h in self._pods.values() if not h.launched and not h.stopping and not h.progress.phase.ended
            ]
        for held in waiting:
            try:
                pod = self.api.get(pod_path(held.namespace, held.name))
            except KubeApiError as exc:
                log.info("pod %s/%s waiting: %s", held.namespace, held.name, exc)
                continue
            if (pod.get("metadata") or {}).get("uid") == held.uid:
                self._try_to_start(held, pod)

    # --- the pod runner's reports (RunReporter) ---

    def pending(self, run_id: str) -> bool:
        with self._lock:
            held = self._pods.get(run_id)
            return held is not None and not held.stopping

    def running(self, run_id: str) -> bool:
        with self._lock:
            held = self._pods.get(run_id)
            if held is None or held.stopping:
                return False
        self._advance(run_id, Phase.RUNNING, running_at=_now())
        return True

    def finished(
        self, run_id: str, exit_code: int, error: str, containers: tuple[ContainerEnd, ...] = (), reason: str = ""
    ) -> None:
        end = PodEnd(exit_code, error, containers, reason)
        with self._lock:
            held = self._pods.get(run_id)
            if self._shutting_down and held is not None and not held.deleting:
                end = PodEnd(exit_code, STOPPED_MESSAGE, containers, STOPPED_REASON)  # killed by the agent's stop
        self._advance(run_id, ended_phase(end), ended_at=_now(), end=end, ends=containers)
        with self._lock:
            held = self._pods.get(run_id)
        if held is not None:
            log.info(
                "pod %s/%s ended: %s (exit code %d)", held.namespace, held.name, held.progress.phase.text, exit_code
            )

    def note(self, run_id: str, text: str) -> None:
        with self._lock:
            held = self._pods.get(run_id)
        if held is not None:
            held.log.note(text)
            log.info("pod %s/%s: %s", held.namespace, held.name, text)

    # --- progress and status ---

    def _advance(self, uid: str, phase: Phase, **facts: Any) -> None:
        with self._lock:
            held = self._pods.get(uid)
            if held is None or not advanced(held.progress, phase):
                return
            held.progress = replace(held.progress, phase=phase, **facts)
            self._mark_dirty(uid)

    def _progress(self, uid: str, **facts: Any) -> None:
        with self._lock:
            held = self._pods.get(uid)
            if held is None or held.progress.phase.ended:
                return
            held.progress = replace(held.progress, **facts)
            self._mark_dirty(uid)

    def _mark_dirty(self, uid: str) -> None:
        """Under the lock: the pod's status is to be sent (once, however often it changes before it goes)."""
        if uid not in self._dirty:
            self._dirty.append(uid)
        self._dirty_changed.notify_all()

    def _write_statuses(self) -> None:
        while True:
            with self._lock:
                while not self._dirty and not (self._stopping.is_set() and self._all_settled()):
                    self._dirty_changed.wait(timeout=1.0)
                if not self._dirty:
                    return
                uid = self._dirty.pop(0)
                held = self._pods.get(uid)
                if held is None:
                    continue
                status = pod_status(held.spec, held.progress)
                finish = held.progress.phase.ended and held.deleting
            try:
                self.api.merge_patch(f"{pod_path(held.namespace, held.name)}/status", {"status": status})
            except KubeApiError as exc:
                if exc.code != 404:
                    log.warning("status of pod %s/%s: %s", held.namespace, held.name, exc)
            if finish:
                self._finish_deletion(held.namespace, held.name, held.uid)

    def _all_settled(self) -> bool:
        """Under the lock: no pod still runs (so no status is still to come)."""
        return all(h.progress.phase.ended or not h.launched for h in self._pods.values())

    # --- stopping, deleting, forgetting ---

    def _stop_pod(self, held: HeldPod, grace: float) -> None:
        with self._lock:
            held.stopping = held.deleting = True
            launched = held.launched
        log.info("pod %s/%s is being deleted: stopping it (grace %.0fs)", held.namespace, held.name, grace)
        if launched:
            self.runner.kill(held.uid, grace)
        else:
            self._finish_deletion(held.namespace, held.name, held.uid)

    def _finish_deletion(self, namespace: str, name: str, uid: str) -> None:
        body = {"gracePeriodSeconds": 0, "preconditions": {"uid": uid}}
        try:
            self.api.delete(pod_path(namespace, name), body)
        except KubeApiError as exc:
            if exc.code not in (404, 409):
                log.warning("finishing the deletion of pod %s/%s: %s", namespace, name, exc)

    def _forget(self, held: HeldPod) -> None:
        with self._lock:
            self._pods.pop(held.uid, None)
            running = held.launched and not held.progress.phase.ended
            held.stopping = True
        if running:
            self.runner.kill(held.uid, 0)

    def _report_lost(self, pod: dict[str, Any]) -> None:
        metadata = pod["metadata"]
        now = _now()
        end = PodEnd(137, LOST_MESSAGE, (), LOST_REASON)
        progress = PodProgress(Phase.FAILED, now, None, now, end)
        status = pod_status(pod.get("spec") or {}, progress)
        try:
            self.api.merge_patch(f"{pod_path(metadata['namespace'], metadata['name'])}/status", {"status": status})
        except KubeApiError as exc:
            log.warning("reporting pod %s/%s lost: %s", metadata["namespace"], metadata["name"], exc)

    def _shut_down(self) -> None:
        """Pods cannot outlive the agent (their processes end with it): they are stopped and reported failed."""
        with self._lock:
            self._shutting_down = True
            running = [h for h in self._pods.values() if h.launched and not h.progress.phase.ended]
        if running:
            log.info("stopping %d pods: %s", len(running), STOPPED_MESSAGE)
        self.runner.shutdown()
        for held in running:  # a pod the runner did not report ended
            end = PodEnd(137, STOPPED_MESSAGE, (), STOPPED_REASON)
            self._advance(held.uid, Phase.FAILED, ended_at=_now(), end=end)

    # --- for the kubelet endpoint ---

    def pod_log(self, namespace: str, name: str, container: str) -> Optional[PodLog]:
        """The log of the node's pod `namespace/name`, if it has a container `container`."""
        with self._lock:
            for held in self._pods.values():
                if held.namespace == namespace and held.name == name:
                    names = [
                        c.get("name") for c in (*held.spec.get("initContainers", []), *held.spec.get("containers", []))
                    ]
                    return held.log if container in names else None
        return None
