"""The admin's fallback architecture, without a server: how the node-group file and the connector setting give
it, the one table of what a submit does when the image's platforms can't be read, the plan it makes, and what
the task's message and custom_info then say."""

from __future__ import annotations

import pytest

from armada_flyte import Architecture, ArmadaConfig, InvalidConfig
from armada_flyte.armada_names import JobState
from armada_flyte.connector.config.node_groups import NodeGroups
from armada_flyte.connector.config.settings import resolve_settings, settings_from
from armada_flyte.connector.model.metadata import ArmadaJobMetadata
from armada_flyte.connector.poll.outcome import Observed, Rules, outcome_of
from armada_flyte.connector.submit.fallback import Fallback, ImageQuestion, when_unreadable
from armada_flyte.connector.submit.plan import SubmitSettings, image_question, plan_job

from support.armada_templates import python_template

pytestmark = pytest.mark.pure

ARM, AMD = Architecture.arm64, Architecture.amd64
TWO = {"amd64": {}, "arm64": {}}
ENV = "ARMADA_FLYTE_FALLBACK_ARCHITECTURE"
WHY = "RegistryUnreachable: registry 127.0.0.1:9 could not be reached: connection refused"
IMAGE = "127.0.0.1:9/train:1"
FILE_FALLBACK = Fallback(AMD, "fallback_architecture in groups.yaml")


# ---- where it is set ----
@pytest.mark.parametrize("written, read", [("amd64", AMD), ("x86_64", AMD), ("aarch64", ARM), ("", None), (None, None)])
def test_the_node_group_file_names_the_fallback_in_any_spelling(written, read):
    groups = NodeGroups.from_mapping({"fallback_architecture": written, "architectures": TWO}, "groups.yaml")
    assert groups.fallback_architecture == read
    assert groups.fallback_set_by == ("fallback_architecture in groups.yaml" if read else "")


def test_a_fallback_the_file_does_not_offer_is_refused_at_load_naming_the_field_the_value_and_the_fix():
    with pytest.raises(InvalidConfig) as caught:
        NodeGroups.from_mapping({"fallback_architecture": "arm64", "architectures": {"amd64": {}}}, "groups.yaml")
    error = caught.value
    assert (error.field, error.value) == ("groups.yaml: fallback_architecture", "arm64")
    assert "offer (amd64)" in error.fix and "add arm64 under architectures" in error.fix
    assert "leave fallback_architecture out" in error.fix


def test_a_fallback_that_is_no_architecture_is_refused_naming_the_spellings():
    with pytest.raises(InvalidConfig) as caught:
        NodeGroups.from_mapping({"fallback_architecture": "sparc", "architectures": TWO}, "groups.yaml")
    assert (caught.value.field, caught.value.value) == ("groups.yaml: fallback_architecture", "sparc")
    assert caught.value.fix.startswith("use one of amd64, arm64")


@pytest.mark.parametrize("preset", ["gke", "eks-karpenter", "aks", "embedded", "generic"])
def test_no_preset_sets_a_fallback(preset):
    assert NodeGroups.preset(preset).fallback_architecture is None


def test_the_connector_setting_overrides_the_files_fallback(tmp_path):
    path = tmp_path / "groups.yaml"
    path.write_text("fallback_architecture: arm64\narchitectures: {amd64: {}, arm64: {}}\n")
    assert settings_from(node_groups_file=str(path)).node_groups().fallback_architecture == ARM
    groups = settings_from(node_groups_file=str(path), fallback_architecture="x86_64").node_groups()
    assert groups.fallback_architecture == AMD
    assert groups.fallback_set_by == f"the connector setting fallback_architecture ({ENV})"
    assert (
        settings_from(node_groups_file=str(path), fallback_architecture="").node_groups().fallback_architecture == ARM
    )


def test_the_environment_variable_sets_the_fallback_over_a_preset(monkeypatch):
    monkeypatch.setenv(ENV, "amd64")
    groups = resolve_settings(node_groups_preset="embedded").node_groups()
    assert (groups.fallback_architecture, groups.origin) == (AMD, "preset embedded (embedded.yaml)")


def test_an_environment_fallback_the_groups_do_not_offer_is_refused_naming_the_variable(tmp_path, monkeypatch):
    path = tmp_path / "groups.yaml"
    path.write_text("architectures: {amd64: {}}\n")
    monkeypatch.setenv(ENV, "arm64")
    with pytest.raises(InvalidConfig) as caught:
        resolve_settings(node_groups_file=str(path)).node_groups()
    error = caught.value
    assert ENV in error.field and error.value == "arm64"
    assert f"the node groups of {path} offer (amd64)" in error.fix and "unset it" in error.fix


def test_an_environment_fallback_that_is_no_architecture_is_refused_when_the_settings_are_read(monkeypatch):
    monkeypatch.setenv(ENV, "sparc")
    with pytest.raises(InvalidConfig) as caught:
        resolve_settings()
    assert (caught.value.field, caught.value.value) == ("fallback_architecture", "sparc")


# ---- the decision: what a submit does when the image's platforms can't be read ----
PINNED = ImageQuestion(IMAGE, ARM)
PREFER_ARM = ImageQuestion(IMAGE, None, (ARM, AMD))
ANY = ImageQuestion(IMAGE, None, (AMD, ARM))
ANY_ARM_ONLY = ImageQuestion(IMAGE, None, (ARM,))  # `any`, its declared image platforms leave arm64 alone
ANY_AMD_ONLY = ImageQuestion(IMAGE, None, (AMD,))


@pytest.mark.parametrize(
    "question, fallback, blocks, refuse, narrowed_to, says",
    [
        # no fallback: today's answers (go on unchecked, or refused when the admin blocks)
        (PINNED, None, False, False, None, "submitting anyway without checking arm64"),
        (PINNED, None, True, True, None, "submitting anyway without checking arm64"),
        (PREFER_ARM, None, False, False, None, "it may run on any of arm64, amd64, unchecked"),
        (ANY, None, True, True, None, "it may run on any of amd64, arm64, unchecked"),
        (ImageQuestion(IMAGE, None), None, False, False, None, "it may run on any offered architecture, unchecked"),
        # a pinned task is unaffected by the fallback
        (PINNED, FILE_FALLBACK, False, False, None, "submitting anyway without checking arm64"),
        (PINNED, FILE_FALLBACK, True, True, None, "submitting anyway without checking arm64"),
        # a preference or `any` that includes the fallback is narrowed to it, blocking or not
        (PREFER_ARM, FILE_FALLBACK, False, False, AMD, "narrowed to amd64 of arm64, amd64"),
        (PREFER_ARM, FILE_FALLBACK, True, False, AMD, "narrowed to amd64 of arm64, amd64"),
        (ANY, FILE_FALLBACK, False, False, AMD, "narrowed to amd64 of amd64, arm64"),
        (ANY, FILE_FALLBACK, True, False, AMD, "narrowed to amd64 of amd64, arm64"),
        (ANY_AMD_ONLY, FILE_FALLBACK, True, False, AMD, "narrowed to amd64 of amd64"),
        # one that excludes the fallback keeps what it asked for, as without a fallback
        (ANY_ARM_ONLY, FILE_FALLBACK, False, False, None, "is not among the architectures the task may run on (arm64)"),
        (ANY_ARM_ONLY, FILE_FALLBACK, True, True, None, "is not among the architectures the task may run on (arm64)"),
    ],
)
def test_what_a_submit_does_when_the_image_platforms_cannot_be_read(
    question, fallback, blocks, refuse, narrowed_to, says
):
    verdict = when_unreadable(question, WHY, fallback, blocks)
    assert verdict.refuse == refuse
    assert (verdict.narrowed.architectures if verdict.narrowed else None) == ((narrowed_to,) if narrowed_to else None)
    assert says in verdict.says and WHY in verdict.says
    if fallback is not None and question.architecture is None:
        assert fallback.set_by in verdict.says  # whether it applied or not, the log says whose fallback it was


def test_the_narrowing_says_the_fallback_was_used_and_why():
    narrowed = when_unreadable(PREFER_ARM, WHY, FILE_FALLBACK, False).narrowed
    assert narrowed is not None
    assert narrowed.fallback == f"the platforms of image {IMAGE} could not be read at submit ({WHY})"
    assert narrowed.known_by == "the admin's fallback architecture (fallback_architecture in groups.yaml)"


def test_a_long_registry_error_is_cut_so_the_metadata_stays_small():
    narrowed = when_unreadable(ANY, "x" * 5000, FILE_FALLBACK, False).narrowed
    assert narrowed is not None and len(narrowed.fallback) < 600 and narrowed.fallback.endswith("...)")


# ---- the plan and what the task's message says ----
def submit_settings(fallback: str = "amd64") -> SubmitSettings:
    return SubmitSettings(NodeGroups.from_mapping({"fallback_architecture": fallback, "architectures": TWO}, "g.yaml"))


@pytest.mark.parametrize(
    "architecture, may_run_on",
    [(["arm64", "amd64"], (ARM, AMD)), ("any", (AMD, ARM))],
)
def test_the_question_carries_what_the_task_may_run_on(architecture, may_run_on):
    template = python_template("pass", ArmadaConfig(architecture=architecture))
    assert image_question(template, submit_settings()) == ImageQuestion(template.container.image, None, may_run_on)


def test_a_pinned_task_asks_about_its_one_architecture():
    template = python_template("pass", ArmadaConfig(architecture="arm64"))
    assert image_question(template, submit_settings()) == ImageQuestion(template.container.image, ARM)


@pytest.mark.parametrize("architecture", [["arm64", "amd64"], "any"])
def test_a_task_narrowed_to_the_fallback_is_planned_as_one_job_on_it_and_its_metadata_says_why(architecture):
    settings = submit_settings()
    template = python_template("pass", ArmadaConfig(architecture=architecture))
    question = image_question(template, settings)
    assert question is not None
    verdict = when_unreadable(question, WHY, Fallback(AMD, settings.node_groups.fallback_set_by), False)
    plan = plan_job(template, settings, None, verdict.narrowed)
    assert len(plan.steps) == 1 and plan.architecture == "amd64" and plan.steps[0].node_group == "amd64"
    meta = plan.metadata("job-1", 1000.0, "train")
    assert meta.spill_jobs == "" and meta.fallback == verdict.narrowed.fallback
    assert meta.architecture_source == "task"  # the task asked; the fallback only narrowed what it asked for


def test_a_plan_without_the_fallback_keeps_the_preference():
    template = python_template("pass", ArmadaConfig(architecture=["arm64", "amd64"]))
    plan = plan_job(template, submit_settings(), None, None)
    assert [s.architecture for s in plan.steps] == ["arm64", "amd64"] and plan.metadata("j", 1.0, "t").fallback == ""


FELL_BACK = ArmadaJobMetadata(
    job_id="job-1",
    queue="flyte",
    architecture="amd64",
    node_group="amd64",
    submitted_at=1000.0,
    task="train",
    fallback=f"the platforms of image {IMAGE} could not be read at submit ({WHY})",
)
RULES = Rules(ack_timeout_seconds=300, error_read_grace_seconds=60)


@pytest.mark.parametrize(
    "state, joined",
    [(JobState.QUEUED, "; narrowed to amd64"), (JobState.RUNNING, "; narrowed to amd64"), (JobState.SUCCEEDED, "\n")],
)
def test_the_message_and_custom_info_say_the_fallback_was_used_and_why(state, joined):
    outcome = outcome_of(FELL_BACK, Observed(state, 1010.0), RULES)
    said = f"narrowed to amd64, the admin's fallback architecture: {FELL_BACK.fallback}"
    assert joined in outcome.message and said.lower() in outcome.message.lower(), outcome.message
    assert outcome.info["fallback"] == {"architecture": "amd64", "why": FELL_BACK.fallback}


def test_a_task_that_did_not_fall_back_says_nothing_of_it():
    meta = ArmadaJobMetadata(job_id="j", architecture="amd64", submitted_at=1000.0)
    outcome = outcome_of(meta, Observed(JobState.RUNNING, 1010.0), RULES)
    assert "fallback" not in outcome.message and "fallback" not in outcome.info
