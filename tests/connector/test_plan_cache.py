"""`plan_job` keeps what a plain container's template decides (spec, pod, architecture, placements,
secrets, resources) by the template's content without its args: the jobs it builds from them are
what deciding afresh gives, each create keeps its own args and identity, and nothing that raised is
kept."""

from __future__ import annotations

import pytest
from flyteidl2.core import tasks_pb2
from hypothesis import given, settings
from hypothesis import strategies as st

from armada_flyte import ArmadaConfig
from armada_flyte.connector.armada.submit_items import submit_item
from armada_flyte.connector.config.namespaces import first_match, render_globs
from armada_flyte.connector.config.node_groups import NodeGroups
from armada_flyte.connector.model.identity import RunIdentity
from armada_flyte.connector.submit import decisions
from armada_flyte.connector.submit.decisions import DECISIONS_CACHED
from armada_flyte.connector.submit.execution_context import ExecutionContext
from armada_flyte.connector.submit.plan import SubmitSettings, plan_job
from armada_flyte.errors import InvalidConfig

from support.armada_templates import python_template

pytestmark = pytest.mark.pure

A0_ARGS = ["a0", "--inputs", "s3://b/{{.runName}}/in.pb", "--outputs-path", "s3://b/{{.runName}}/{{.actionName}}"]


def a0_template(config: ArmadaConfig = ArmadaConfig(), args: list[str] = A0_ARGS) -> tasks_pb2.TaskTemplate:
    template = python_template("print(1)", config)
    del template.container.command[:]
    template.container.args.extend(args)
    template.metadata.timeout.seconds = 90
    return template


def gpu_shm_template() -> tasks_pb2.TaskTemplate:
    template = a0_template()
    template.container.resources.requests.add(name=tasks_pb2.Resources.GPU, value="1")
    template.extended_resources.gpu_accelerator.device = "nvidia-tesla-a100"
    template.extended_resources.shared_memory.CopyFrom(
        tasks_pb2.SharedMemory(mount_path="/dev/shm", mount_name="flyte-shm", size_limit="1Gi")
    )
    return template


def identity(n: int) -> RunIdentity:
    return RunIdentity(project="p", domain="d", run=f"r{n}", action=f"a{n}", attempt=n % 2, task="t")


def plan(template, groups, n: int, interruptible: bool = False):
    context = ExecutionContext(
        identity(n), f"s3://b/raw/{n}", {"N": str(n)}, namespace="team", interruptible=interruptible, from_backend=True
    )
    return plan_job(template, SubmitSettings(groups), context)


def forget_all() -> None:
    """Empty every cache a plan reads: the decisions and the admin's rendered tenancy globs."""
    decisions._cache.clear()
    render_globs.cache_clear()
    first_match.cache_clear()


def fresh(template, groups, n: int, interruptible: bool = False):
    """The plan with nothing kept: decided afresh."""
    forget_all()
    made = plan(template, groups, n, interruptible)
    forget_all()
    return made


TEMPLATES = {
    "a0": lambda: a0_template(),
    "pinned": lambda: a0_template(ArmadaConfig(architecture="arm64", priority=3.0)),
    "any": lambda: a0_template(ArmadaConfig(architecture="any")),
    "gang": lambda: a0_template(ArmadaConfig(gang_id="g", gang_cardinality=2)),
    "gpu+shm": gpu_shm_template,
    "plain command": lambda: python_template("print(2)"),
}


@pytest.mark.parametrize("interruptible", [False, True])
@pytest.mark.parametrize("name", list(TEMPLATES))
def test_kept_decisions_are_what_deciding_afresh_gives(name, interruptible):
    groups = NodeGroups.preset("gke")
    template = TEMPLATES[name]()
    afresh = [fresh(template, groups, n, interruptible) for n in range(3)]
    plans = [plan(template, groups, n, interruptible) for n in range(3)]  # the first decides, the others reuse
    assert len(decisions._cache) == 1 or template.HasField("k8s_pod")
    for n, made in enumerate(plans):
        assert made.steps == afresh[n].steps and made.job_set_id == afresh[n].job_set_id
        assert submit_item(made.job) == submit_item(afresh[n].job)
        assert made.job.labels["flyte.org/run"] == f"r{n}"
        assert {"name": "N", "value": str(n)} in made.job.pod_spec["containers"][0]["env"]
    assert plans[1].job == plan(template, groups, 1, interruptible).job


def test_each_create_keeps_its_own_rendered_args():
    groups = NodeGroups.preset("gke")
    decisions._cache.clear()
    first = a0_template(args=["a0", "--inputs", "s3://b/run-1/in.pb", "--outputs-path", "s3://b/run-1/a0"])
    second = a0_template(args=["a0", "--inputs", "s3://b/run-2/in.pb", "--outputs-path", "s3://b/run-2/a0"])
    one, two = plan(first, groups, 1), plan(second, groups, 2)
    assert len(decisions._cache) == 1  # one task: its args differ per run, its decisions don't
    assert "s3://b/run-1/in.pb" in one.job.pod_spec["containers"][0]["args"]
    assert "s3://b/run-2/in.pb" in two.job.pod_spec["containers"][0]["args"]
    assert one.job.outputs_path == "s3://b/run-1/a0" and two.job.outputs_path == "s3://b/run-2/a0"
    assert list(first.container.args)[1:3] == ["--inputs", "s3://b/run-1/in.pb"]  # the caller's template untouched


def test_other_node_groups_decide_again():
    template = a0_template(ArmadaConfig(architecture="arm64"))
    gke, aks = NodeGroups.preset("gke"), NodeGroups.preset("aks")
    on_gke, on_aks = plan(template, gke, 1), plan(template, aks, 1)
    assert on_gke.steps == fresh(template, gke, 1).steps and on_aks.steps == fresh(template, aks, 1).steps
    assert on_gke.steps[0].placement != on_aks.steps[0].placement  # GKE taints its arm64 nodes; AKS doesn't


def test_the_cache_is_bounded():
    groups = NodeGroups.preset("gke")
    for n in range(DECISIONS_CACHED + 20):
        template = a0_template()
        template.id.name = f"task-{n}"
        plan(template, groups, n)
    assert len(decisions._cache) == DECISIONS_CACHED


def test_a_template_that_raised_raises_again():
    groups = NodeGroups.preset("gke")
    template = a0_template()
    del template.container.resources.limits[:]  # no cpu, no memory
    for _ in range(2):
        with pytest.raises(InvalidConfig, match="resources.cpu"):
            plan(template, groups, 1)


def test_the_capacity_class_decides_again():
    groups, template = NodeGroups.preset("gke"), a0_template()
    steady, spot = plan(template, groups, 1), plan(template, groups, 2, interruptible=True)
    assert steady.steps == fresh(template, groups, 1).steps
    assert spot.steps == fresh(template, groups, 2, interruptible=True).steps
    assert steady.steps[0].placement != spot.steps[0].placement


_configs = st.builds(
    ArmadaConfig,
    architecture=st.sampled_from([None, "amd64", "arm64", "any"]),
    priority=st.sampled_from([1.0, 3.0]),
    queue=st.sampled_from([None, "flyte", "other"]),
)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(sorted(TEMPLATES)), _configs, st.integers(0, 5)), min_size=1, max_size=6))
def test_the_items_of_any_sequence_of_creates_are_what_a_cold_cache_builds(creates):
    """Creates of varied templates and configs, in any order and repeated, each get the request item a cold
    cache builds for them: nothing kept for one template or run reaches another's item."""
    groups = NodeGroups.preset("gke")
    forget_all()
    built = []
    for name, config, n in creates:
        template = TEMPLATES[name]() if name in ("gpu+shm", "plain command") else a0_template(config)
        built.append((template, n, submit_item(plan(template, groups, n).job)))
    for template, n, item in built:
        assert item == submit_item(fresh(template, groups, n).job)
