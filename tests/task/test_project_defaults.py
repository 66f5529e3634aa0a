"""Precedence: task > ARMADA_FLYTE_<FIELD> > [tool.armada-flyte] in pyproject.toml > built-in;
resolved at serialisation and baked into the template with where each value came from.

Each test writes a real project (pyproject.toml plus a task module) and serialises its task
the way `flyte run` / `flyte deploy` do, with the project folder as Flyte's root_dir."""

import importlib.util
import itertools
import sys

import flyte
import pytest
from google.protobuf import json_format

from armada_flyte import ArmadaConfig, ImagePlatformMismatch, InvalidConfig

_modules = itertools.count()


@pytest.fixture
def project(tmp_path, monkeypatch):
    for name in ("ARCHITECTURE", "QUEUE", "NAMESPACE", "PRIORITY", "JOB_SET_ID"):
        monkeypatch.delenv(f"ARMADA_FLYTE_{name}", raising=False)

    def write(table: str):
        (tmp_path / "pyproject.toml").write_text(f"[project]\nname = 'demo'\n\n[tool.armada-flyte]\n{table}\n")
        return tmp_path

    return write


def make_task(config, image="python:3.11", root=None):
    """A task defined in a module inside the project folder (Flyte resolves tasks relative to it)."""
    name = f"project_tasks_{next(_modules)}"
    path = root / f"{name}.py"
    path.write_text(
        "import flyte\n"
        "def build(config, image):\n"
        "    env = flyte.TaskEnvironment('env', image=image, resources=flyte.Resources(cpu=1, "
        "memory='1Gi'), plugin_config=config)\n"
        "    @env.task\n"
        "    async def work() -> int:\n"
        "        return 1\n"
        "    return work\n"
    )
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module.build(config, image)


def custom_of(serialize, task, root):
    return json_format.MessageToDict(serialize(task, root_dir=root).custom)


@pytest.mark.pure
def test_pyproject_sets_defaults_with_provenance(serialize, project):
    root = project('architecture = "aarch64"\nqueue = "ml"\npriority = 3')
    custom = custom_of(serialize, make_task(ArmadaConfig(), root=root), root)
    assert custom["architecture"] == "arm64"
    assert custom["queue"] == "ml"
    assert custom["priority"] == 3
    assert custom["sources"] == {"architecture": "project", "queue": "project", "priority": "project"}


@pytest.mark.pure
def test_env_beats_pyproject(serialize, project, monkeypatch):
    root = project('architecture = "arm64"\nqueue = "ml"')
    monkeypatch.setenv("ARMADA_FLYTE_ARCHITECTURE", "x86_64")
    custom = custom_of(serialize, make_task(ArmadaConfig(), root=root), root)
    assert custom["architecture"] == "amd64"
    assert custom["sources"]["architecture"] == "env"
    assert custom["sources"]["queue"] == "project"


@pytest.mark.pure
def test_task_beats_env_and_pyproject(serialize, project, monkeypatch):
    root = project('architecture = "arm64"')
    monkeypatch.setenv("ARMADA_FLYTE_ARCHITECTURE", "arm64")
    custom = custom_of(serialize, make_task(ArmadaConfig(architecture="amd64", queue="mine"), root=root), root)
    assert (custom["architecture"], custom["sources"]["architecture"]) == ("amd64", "task")
    assert (custom["queue"], custom["sources"]["queue"]) == ("mine", "task")


@pytest.mark.pure
def test_nothing_set_leaves_architecture_to_the_platform(serialize, project):
    root = project("")
    custom = custom_of(serialize, make_task(ArmadaConfig(), root=root), root)
    assert "architecture" not in custom
    assert custom["queue"] == "flyte" and "queue" not in custom["sources"]


@pytest.mark.pure
def test_registered_template_keeps_its_architecture_when_defaults_change(serialize, project):
    root = project('architecture = "arm64"')
    task = make_task(ArmadaConfig(), root=root)
    template = serialize(task, root_dir=root)
    project('architecture = "amd64"')
    assert json_format.MessageToDict(template.custom)["architecture"] == "arm64"
    assert custom_of(serialize, task, root)["architecture"] == "amd64"


@pytest.mark.pure
def test_task_override_is_the_launch_time_override(serialize, project):
    root = project('architecture = "amd64"')
    task = make_task(ArmadaConfig(queue="q"), root=root)
    overridden = task.override(plugin_config=ArmadaConfig(queue="q", architecture="arm64"))
    assert custom_of(serialize, overridden, root)["architecture"] == "arm64"
    assert custom_of(serialize, overridden, root)["sources"]["architecture"] == "task"
    assert custom_of(serialize, task, root)["architecture"] == "amd64"
    assert type(overridden) is type(task)


@pytest.mark.pure
def test_unknown_pyproject_key_is_refused(serialize, project):
    root = project('arch = "arm64"')
    with pytest.raises(InvalidConfig) as info:
        serialize(make_task(ArmadaConfig(), root=root), root_dir=root)
    assert "[tool.armada-flyte]" in str(info.value) and "arch" in str(info.value)
    assert "architecture" in str(info.value)


@pytest.mark.pure
def test_bad_pyproject_value_names_file_and_key(serialize, project):
    root = project('architecture = "sparc"')
    with pytest.raises(InvalidConfig) as info:
        serialize(make_task(ArmadaConfig(), root=root), root_dir=root)
    assert "pyproject.toml [tool.armada-flyte] architecture" in str(info.value)


@pytest.mark.pure
def test_bad_env_value_names_the_variable(serialize, project, monkeypatch):
    root = project("")
    monkeypatch.setenv("ARMADA_FLYTE_PRIORITY", "urgent")
    with pytest.raises(InvalidConfig) as info:
        serialize(make_task(ArmadaConfig(), root=root), root_dir=root)
    assert info.value.field == "ARMADA_FLYTE_PRIORITY"


def test_image_built_without_the_architecture_fails_serialisation(serialize, project):
    root = project("")
    image = flyte.Image.from_debian_base(name="train", registry="127.0.0.1:5000", platform=("linux/amd64",))
    with pytest.raises(ImagePlatformMismatch) as info:
        serialize(make_task(ArmadaConfig(architecture="arm64"), image=image, root=root), root_dir=root)
    message = str(info.value)
    assert "work" in message and "linux/amd64" in message and "arm64" in message
    assert "platform=" in message


def test_project_architecture_is_checked_against_the_image_too(serialize, project):
    root = project('architecture = "arm64"')
    image = flyte.Image.from_debian_base(name="train", registry="127.0.0.1:5000", platform=("linux/amd64",))
    with pytest.raises(ImagePlatformMismatch):
        serialize(make_task(ArmadaConfig(), image=image, root=root), root_dir=root)


def test_multi_arch_image_passes(serialize, project):
    root = project("")
    image = flyte.Image.from_debian_base(name="train", registry="127.0.0.1:5000")
    assert (
        custom_of(serialize, make_task(ArmadaConfig(architecture="arm64"), image=image, root=root), root)[
            "architecture"
        ]
        == "arm64"
    )


@pytest.mark.pure
def test_prebuilt_reference_is_left_to_the_registry_check(serialize, project):
    root = project("")
    custom = custom_of(serialize, make_task(ArmadaConfig(architecture="arm64"), image="python:3.11", root=root), root)
    assert custom["architecture"] == "arm64"


# ---- architecture = "any": the request and its source are baked in, with the architectures a
# Flyte-built image declares (its `platform`), so the connector can narrow the platform's set.
@pytest.mark.pure
def test_pyproject_any_is_baked_with_its_source(serialize, project):
    root = project('architecture = "any"')
    custom = custom_of(serialize, make_task(ArmadaConfig(), root=root), root)
    assert custom["architecture"] == "any"
    assert custom["sources"]["architecture"] == "project"
    assert "image_architectures" not in custom  # a prebuilt reference: left to the registry check


@pytest.mark.pure
def test_env_any_beats_a_pinned_pyproject(serialize, project, monkeypatch):
    root = project('architecture = "arm64"')
    monkeypatch.setenv("ARMADA_FLYTE_ARCHITECTURE", "ANY")
    custom = custom_of(serialize, make_task(ArmadaConfig(), root=root), root)
    assert (custom["architecture"], custom["sources"]["architecture"]) == ("any", "env")


@pytest.mark.pure
def test_task_pin_beats_a_project_any(serialize, project):
    root = project('architecture = "any"')
    custom = custom_of(serialize, make_task(ArmadaConfig(architecture="arm64"), root=root), root)
    assert (custom["architecture"], custom["sources"]["architecture"]) == ("arm64", "task")


def test_flyte_built_multi_arch_image_bakes_both_architectures(serialize, project):
    root = project("")
    image = flyte.Image.from_debian_base(
        name="train", registry="127.0.0.1:5000", platform=("linux/arm64", "linux/amd64")
    )
    custom = custom_of(serialize, make_task(ArmadaConfig(architecture="any"), image=image, root=root), root)
    assert custom["image_architectures"] == ["amd64", "arm64"]


def test_image_declared_for_one_architecture_narrows_any_to_it(serialize, project):
    root = project("")
    image = flyte.Image.from_debian_base(name="train", registry="127.0.0.1:5000", platform=("linux/arm64",))
    custom = custom_of(serialize, make_task(ArmadaConfig(architecture="any"), image=image, root=root), root)
    assert (custom["architecture"], custom["image_architectures"]) == ("any", ["arm64"])


def test_image_declared_for_neither_architecture_fails_serialisation(serialize, project):
    root = project("")
    image = flyte.Image.from_debian_base(name="train", registry="127.0.0.1:5000", platform=("linux/s390x",))
    with pytest.raises(ImagePlatformMismatch) as info:
        serialize(make_task(ArmadaConfig(architecture="any"), image=image, root=root), root_dir=root)
    assert "'any'" in str(info.value) and "linux/s390x" in str(info.value)


# ---- an ordered preference: baked in like `any`, with its source
@pytest.mark.pure
def test_env_preference_is_baked_in_order_with_its_source(serialize, project, monkeypatch):
    root = project('architecture = "amd64"')
    monkeypatch.setenv("ARMADA_FLYTE_ARCHITECTURE", "arm64,amd64")
    custom = custom_of(serialize, make_task(ArmadaConfig(spill_after=60), root=root), root)
    assert (custom["architecture"], custom["sources"]["architecture"]) == (["arm64", "amd64"], "env")
    assert (custom["spill_after"], custom["sources"]["spill_after"]) == (60, "task")


@pytest.mark.pure
def test_pyproject_preference_is_a_list(serialize, project):
    root = project('architecture = ["arm64", "amd64"]')
    custom = custom_of(serialize, make_task(ArmadaConfig(), root=root), root)
    assert (custom["architecture"], custom["sources"]["architecture"]) == (["arm64", "amd64"], "project")
