"""`armada-flyte doctor`: check a platform's node groups and Armada configs, and optionally a live Armada."""

from __future__ import annotations

import argparse
import functools
import pathlib
from typing import Any, Optional

from armada_flyte.admin.doctor import config_checks
from armada_flyte.admin.doctor.findings import Finding, problem, problems
from armada_flyte.admin.doctor.inputs import load_node_groups, load_yaml_mapping
from armada_flyte.admin.doctor.render import as_json, table
from armada_flyte.architecture import Architecture
from armada_flyte.errors import InvalidConfig
from armada_flyte.spec import DEFAULT_QUEUE

_DESCRIPTION = """\
Find the settings that would make Armada jobs fail and say how to fix each: node groups whose
tolerations miss their own taints, node labels the Armada executor doesn't track (jobs REJECTED),
taints it doesn't tolerate (jobs queued forever), a gang uniformity label the scheduler doesn't
index, a fallback architecture that can't apply, architectures the runtime image lacks, and, with
--armada-url or --queue, whether Armada answers, takes new work (an embedded server says why not,
e.g. its state folder can't be written), accepts the connector's credentials and has the queue. It
reports the admin's tenancy policy (what backend tasks may choose for themselves), recommends Pod
Security Admission labels on the job namespaces, warns about any queue being allowed on a
multi-project backend, and, with --task, about tasks the policy refuses. Exits 1 when anything is
wrong (warnings don't count).
"""


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "doctor",
        help="check node groups, Armada configs and a live Armada for problems, with fixes",
        description=_DESCRIPTION,
    )
    source = parser.add_mutually_exclusive_group()
    source.add_argument(
        "--node-groups",
        type=pathlib.Path,
        metavar="FILE",
        help="node-group YAML to check (default: the connector's setting)",
    )
    source.add_argument(
        "--preset", metavar="NAME", help="a shipped node-group preset (gke, eks-karpenter, aks, embedded, generic)"
    )
    parser.add_argument(
        "--executor-config", type=pathlib.Path, metavar="FILE", help="Armada executor config, or its Helm values"
    )
    parser.add_argument(
        "--scheduler-config", type=pathlib.Path, metavar="FILE", help="Armada scheduler config, or its Helm values"
    )
    parser.add_argument(
        "--armada-url", metavar="HOST:PORT", help="check this Armada live (default with --queue: ARMADA_URL)"
    )
    parser.add_argument("--queue", metavar="NAME", help=f"queue that must exist on Armada (default: {DEFAULT_QUEUE})")
    runtime = parser.add_mutually_exclusive_group()
    runtime.add_argument(
        "--runtime-platforms",
        type=_platforms,
        metavar="LIST",
        help="platforms the runtime image is built for, e.g. linux/amd64,linux/arm64",
    )
    runtime.add_argument(
        "--runtime-image",
        metavar="REF",
        help="the runtime image; its platforms are read from its registry (credentials from the docker config)",
    )
    parser.add_argument(
        "--projects",
        type=_names,
        default=(),
        metavar="LIST",
        help="the Flyte backend's projects, comma-separated: the tenancy checks render the job namespaces and "
        "plan --task for each, and warn about any queue (allowed_queues '*') when there are several",
    )
    parser.add_argument(
        "--domain", default="development", help="the domain the tenancy checks assume (default: development)"
    )
    parser.add_argument(
        "--task",
        action="append",
        default=[],
        metavar="MODULE:TASK",
        help="a task to plan as a backend run of each project: warns when the admin's tenancy policy refuses it "
        "(its own namespace, queue or pod template); repeat for more tasks",
    )
    parser.add_argument(
        "--root", type=pathlib.Path, default=pathlib.Path.cwd(), help="the folder --task modules are under"
    )
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument(
        "--example",
        choices=sorted(EXAMPLES),
        help="print the shipped example of an Armada config with what armada-flyte needs, and exit",
    )
    parser.set_defaults(func=run)


EXAMPLES = {"executor-config": "executor-config.yaml", "scheduler-config": "scheduler-config.yaml"}
"""The examples the fixes point to (deploy/armada/ in the repository; `armada_configs` in the package)."""


def example(name: str) -> str:
    """The text of a shipped example config."""
    return (pathlib.Path(__file__).parent / "armada_configs" / EXAMPLES[name]).read_text()


def run(args: argparse.Namespace) -> int:
    if args.example:
        print(example(args.example), end="")
        return 0
    findings = collect(args)
    print(as_json(findings) if args.json else table(findings))
    return 1 if problems(findings) else 0


def collect(args: argparse.Namespace) -> list[Finding]:
    """Every finding, in the order an admin would fix them: node groups, executor, scheduler, image, live."""
    groups, loaded = load_node_groups(args.node_groups, args.preset)
    findings = [loaded]
    if groups is not None:
        findings += config_checks.check_node_groups(groups)
        findings += config_checks.check_node_names(groups)
        findings += config_checks.check_fallback(groups, *_connector_fallback())
    if args.executor_config is not None:
        executor, unreadable = load_yaml_mapping(args.executor_config, "executor.config", "executor config")
        if unreadable is not None:
            findings.append(unreadable)
        elif groups is not None:
            findings += config_checks.check_executor_config(groups, executor or {})
    if args.scheduler_config is not None:
        scheduler, unreadable = load_yaml_mapping(args.scheduler_config, "scheduler.config", "scheduler config")
        findings += (
            [unreadable]
            if unreadable is not None
            else config_checks.check_scheduler_config(scheduler or {}, groups=groups)
        )
    if args.runtime_image is not None:
        platforms, unreadable = _image_architectures(args.runtime_image)
        findings += [unreadable] if unreadable is not None else []
        if platforms is not None and groups is not None:
            findings += config_checks.check_runtime_platforms(groups, platforms)
    if args.runtime_platforms is not None and groups is not None:
        findings += config_checks.check_runtime_platforms(groups, args.runtime_platforms)
    findings += _tenancy(args)
    if args.armada_url is not None or args.queue is not None:
        findings += _live(args.armada_url, args.queue or DEFAULT_QUEUE)
    return findings


def _connector_fallback() -> tuple[Optional[Architecture], Optional[bool]]:
    """The connector's own fallback_architecture and whether it reads images' platforms (None, None: its settings
    are invalid, which the tenancy checks report)."""
    from armada_flyte.connector.config.settings import resolve_settings

    try:
        settings = resolve_settings()
    except InvalidConfig:
        return None, None
    return settings.targets.fallback_architecture, settings.images.check_image_platforms


def _tenancy(args: argparse.Namespace) -> list[Finding]:
    """The admin's tenancy policy as the connector's settings give it, and the --task tasks under it."""
    from armada_flyte.admin.doctor.tenancy_checks import check_tasks, check_tenancy
    from armada_flyte.connector.config.settings import resolve_settings

    try:
        settings = resolve_settings()
    except InvalidConfig as exc:
        return [
            problem(
                "tenancy.policy",
                f"the connector settings are invalid, so its tenancy policy can't be read: {exc}",
                "fix the ARMADA_FLYTE_* variables (or ARMADA_FLYTE_CONFIG_FILE)",
            )
        ]
    findings = check_tenancy(settings, args.projects, args.domain)
    if args.task:
        from armada_flyte.admin.dry_run import load_task, task_template
        from armada_flyte.connector.submit.plan import SubmitSettings

        root = args.root.resolve()
        try:
            tasks = [(reference, load_task(reference, root)) for reference in args.task]
            submit = SubmitSettings.of(settings, settings.node_groups())
        except InvalidConfig as exc:
            return [*findings, problem("tenancy.tasks", str(exc), "name each task as module:task under --root")]
        templates = [(ref, functools.partial(task_template, t, root, domain=args.domain)) for ref, t in tasks]
        findings += check_tasks(templates, submit, args.projects or ("project",), args.domain)
    return findings


def _live(url: Optional[str], queue: str) -> list[Finding]:
    from armada_flyte.connector.config.settings import resolve_settings

    try:
        settings = resolve_settings(**({"armada_url": url} if url else {}))
    except InvalidConfig as exc:
        return [
            problem(
                "armada.settings",
                f"the connector settings are invalid, so the live checks can't run: {exc}",
                "fix the ARMADA_FLYTE_* variables (or ARMADA_FLYTE_CONFIG_FILE)",
            )
        ]
    from armada_flyte.admin.doctor.live_checks import check_armada

    return check_armada(settings.connection.armada_url, queue, settings)


def _image_architectures(image: str) -> tuple[Optional[frozenset[Architecture]], Optional[Finding]]:
    """The architectures `image` has, per its registry, or a finding saying why they can't be read."""
    from armada_flyte.connector.config.settings import resolve_settings
    from armada_flyte.errors import RegistryError
    from armada_flyte.registry.client import image_platforms

    try:
        found = image_platforms(image, insecure_hosts=resolve_settings().images.registry_insecure_hosts)
    except (RegistryError, InvalidConfig) as exc:
        return None, problem(
            "runtime-image.platforms",
            f"can't read the platforms of {image}: {exc}",
            "check the reference and that this machine can reach the registry, or pass --runtime-platforms",
        )
    return frozenset(arch for arch in Architecture if found.supports(arch)), None


def _names(text: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in text.split(",") if part.strip())


def _platforms(text: str) -> frozenset[Architecture]:
    try:
        return frozenset(Architecture.parse(part, "--runtime-platforms") for part in text.split(",") if part.strip())
    except InvalidConfig as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
