"""Pods as Kubernetes runs them: init containers, then all main containers together; limits, deadlines,
namespaces, and the metadata Armada's executor puts on the pod.

Tests not marked `embedded_only` hold on a real cluster too (they only read the API).
"""

from __future__ import annotations

import json

import pytest
from armada_client.armada import event_pb2, submit_pb2
from armada_client.k8s.io.api.core.v1 import generated_pb2 as core

from support.job_events import failed_event
from support.pods import cluster, item, node_set, pod, python, resources, submit_one
from support.waiting import job_error, state_of, wait_for_state, wait_until

FAILED, SUCCEEDED = submit_pb2.FAILED, submit_pb2.SUCCEEDED
WORK = "/work-volume"


def container(name: str, code: str, memory: str = "64Mi") -> core.Container:
    return core.Container(
        name=name,
        image=pod().containers[0].image,
        command=python(code),
        resources=resources("100m", memory),
        volumeMounts=[core.VolumeMount(name="work", mountPath=WORK)],
    )


def pod_of(mains: list[core.Container], inits: list[core.Container] = (), **fields) -> core.PodSpec:
    return core.PodSpec(
        initContainers=list(inits),
        containers=mains,
        restartPolicy="Never",
        volumes=[core.Volume(name="work", volumeSource=core.VolumeSource(emptyDir=core.EmptyDirVolumeSource()))],
        **fields,
    )


def append(word: str) -> str:
    return f"open('{WORK}/order', 'a').write('{word} ')"


def test_init_containers_run_in_order_before_the_main_containers_which_run_together(client, queue, job_set):
    # Each main container waits for the other's mark: the pod only succeeds if they run at the same time.
    meet = (
        "import os, sys, time; open('{w}/{me}', 'w').close(); t = time.time() + 20\n"
        "while not os.path.exists('{w}/{other}') and time.time() < t: time.sleep(0.05)\n"
        "order = open('{w}/order').read().split()\n"
        "sys.exit(0 if os.path.exists('{w}/{other}') and order == ['first', 'second'] else 1)"
    )
    spec = pod_of(
        [
            container("left", meet.format(w=WORK, me="left", other="right")),
            container("right", meet.format(w=WORK, me="right", other="left")),
        ],
        [container("first", append("first")), container("second", append("second"))],
    )
    job_id = submit_one(client, queue, job_set, item(spec))
    wait_for_state(client, job_id, SUCCEEDED, timeout=60)


def test_a_failing_init_container_fails_the_run_with_its_exit_code_and_no_main_container_runs(client, queue, job_set):
    spec = pod_of(
        [container("main", append("main"))],
        [container("setup", "import sys; sys.exit(7)"), container("never", append("never"))],
    )
    job_id = submit_one(client, queue, job_set, item(spec))
    wait_for_state(client, job_id, FAILED, timeout=30)
    event = failed_event(client, queue, job_set, job_id)
    statuses = {s.name: s for s in event.container_statuses}
    assert set(statuses) == {"setup"} and statuses["setup"].exitCode == 7


def test_the_pod_fails_with_the_exit_code_of_the_main_container_that_failed(client, queue, job_set):
    spec = pod_of([container("fine", "pass"), container("broken", "import sys; sys.exit(3)")])
    job_id = submit_one(client, queue, job_set, item(spec))
    wait_for_state(client, job_id, FAILED, timeout=30)
    statuses = {s.name: s.exitCode for s in failed_event(client, queue, job_set, job_id).container_statuses}
    assert statuses == {"fine": 0, "broken": 3}


def test_a_container_over_its_memory_limit_is_oomkilled(client, queue, job_set):
    hog = "import time; block = b'x' * (300 * 2**20); time.sleep(60)"
    job_id = submit_one(client, queue, job_set, item(pod(python(hog), memory="64Mi")))
    wait_for_state(client, job_id, FAILED, timeout=60)
    event = failed_event(client, queue, job_set, job_id)
    # Armada's cause for an OOMKilled container (internal/executor/util/pod_status.go, isOom).
    assert event.cause == event_pb2.OOM
    (status,) = event.container_statuses
    assert (status.reason, status.exitCode) == ("OOMKilled", 137)


@pytest.mark.embedded_only
def test_file_backed_pages_do_not_count_against_the_memory_limit(client, queue, job_set, embedded_armada):
    """A cgroup reclaims clean file pages (a big binary's text, a mapped file) before it OOM-kills, so a
    container that maps and reads a 128 MiB file lives on under a 64Mi limit. (At its exit the shim's
    peak check, ru_maxrss, can't tell file pages apart: this pod is cancelled while it runs.)"""
    reader = (
        "import mmap, time\n"
        "with open('big', 'wb') as f: f.truncate(128 * 2**20)\n"
        "f = open('big', 'rb')\n"
        "m = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ)\n"
        "total = sum(m[i] for i in range(0, len(m), 4096))\n"  # every page resident: RssFile ~128 MiB
        "for n in range(20):\n"  # 2 s of the shim's 0.1 s checks with the pages resident
        "    print(f'alive {n}', flush=True); time.sleep(0.1)\n"
        "time.sleep(300)\n"
    )
    job_id = submit_one(client, queue, job_set, item(pod(python(reader), memory="64Mi")))
    wait_until(lambda: "alive 19" in embedded_armada.logs(job_id), timeout=60, what="20 checks with the file mapped")
    assert state_of(client, job_id) == submit_pb2.RUNNING
    client.cancel_jobs(queue, job_set, job_id)
    wait_for_state(client, job_id, submit_pb2.CANCELLED)


def test_active_deadline_seconds_kills_the_pod(client, queue, job_set):
    spec = pod(python("import time; time.sleep(120)"))
    spec.activeDeadlineSeconds = 1
    job_id = submit_one(client, queue, job_set, item(spec))
    wait_for_state(client, job_id, FAILED, timeout=60)
    event = failed_event(client, queue, job_set, job_id)
    # The kubelet sets reason DeadlineExceeded; Armada maps it to this cause (pod_status.go).
    assert event.cause == event_pb2.DeadlineExceeded
    assert "longer than the specified deadline" in job_error(client, job_id)


def test_a_pod_in_a_namespace_that_does_not_exist_fails(client, queue, job_set):
    job_id = submit_one(client, queue, job_set, item(pod(["true"]), namespace="no-such-namespace"))
    wait_for_state(client, job_id, FAILED, timeout=30)
    # Kubernetes' refusal, which Armada's executor treats as fatal (config/executor/config.yaml,
    # fatalPodSubmissionErrors).
    assert job_error(client, job_id) == 'namespaces "no-such-namespace" not found'


@pytest.mark.embedded_only
def test_namespaces_named_in_the_cluster_file_exist(own_armada):
    armada, client = own_armada({**cluster(node_set("amd64", cpu="4")), "namespaces": ["team-a"]})
    job_id = submit_one(client, "conformance", "ns", item(pod(["true"]), namespace="team-a"))
    wait_for_state(client, job_id, SUCCEEDED, timeout=30)


@pytest.mark.embedded_only
def test_field_refs_read_the_pods_metadata_with_armadas_own_labels_and_annotations(
    embedded_armada, client, queue, job_set
):
    refs = {
        "NOTE": "metadata.annotations['example.com/note']",
        "JOB_LABEL": "metadata.labels['armada_job_id']",
        "QUEUE_LABEL": "metadata.labels['armada_queue_id']",
        "JOB_SET": "metadata.annotations['armada_jobset_id']",
        "UID": "metadata.uid",
        "NAME": "metadata.name",
        "NAMESPACE": "metadata.namespace",
        "NODE": "spec.nodeName",
    }
    spec = pod(python("import json, os; print(json.dumps(dict(os.environ)))"))
    spec.containers[0].env.extend(
        core.EnvVar(name=name, valueFrom=core.EnvVarSource(fieldRef=core.ObjectFieldSelector(fieldPath=path)))
        for name, path in refs.items()
    )
    job_id = submit_one(client, queue, job_set, item(spec, annotations={"example.com/note": "hello"}))
    wait_for_state(client, job_id, SUCCEEDED, timeout=30)
    env = json.loads(next(line for line in embedded_armada.logs(job_id) if line.startswith("{")))
    run = embedded_armada.plane.queries.find_job(job_id).latest_run
    assert env["NOTE"] == "hello"
    assert env["JOB_LABEL"] == env["ARMADA_JOB_ID"] == job_id
    assert env["QUEUE_LABEL"] == env["ARMADA_QUEUE"] == queue
    assert env["JOB_SET"] == env["ARMADA_JOB_SET_ID"] == job_set
    assert env["UID"] == run.id
    assert (env["NAME"], env["NAMESPACE"], env["NODE"]) == (f"armada-{job_id}-0", "default", run.node.name)


def test_an_absurd_quantity_is_rejected_alone_and_later_jobs_still_run(client, queue, job_set):
    absurd = submit_one(client, queue, job_set, item(pod(["true"], cpu="1e5000")))
    later = submit_one(client, queue, job_set, item(pod(["true"])))
    wait_for_state(client, later, SUCCEEDED, timeout=30)
    assert wait_for_state(client, absurd, submit_pb2.REJECTED, FAILED) in (submit_pb2.REJECTED, FAILED)
