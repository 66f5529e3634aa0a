"""Errors users can catch, each saying what was asked, what exists, and how to fix it."""

from __future__ import annotations

from typing import Any, Iterable

MAX_SHOWN_VALUE = 200
"""Characters of a bad value an error message shows: a hostile input must not make a huge message."""
MAX_SHOWN_FIELD = 500
"""Characters of a field's path an error message shows: a document's keys (part of the path) are input too."""
MAX_SHOWN_FIX = 2000
"""Characters of a fix an error message shows (a fix may quote a long list of what exists)."""


class ArmadaFlyteError(Exception):
    """Base of every error this package raises on purpose."""


def shown(value: object, limit: int = MAX_SHOWN_VALUE) -> str:
    """`repr(value)` cut to `limit` characters (and safe for values whose repr itself fails)."""
    try:
        text = repr(value)
    except (ValueError, RecursionError):  # e.g. an int past Python's 4,300-digit limit
        text = f"<a {type(value).__name__} too large to show>"
    return cut(text, limit)


def cut(text: str, limit: int) -> str:
    """`text` cut to `limit` characters, ending in "..." when something was cut."""
    return text if len(text) <= limit else text[: limit - 3] + "..."


class InvalidConfig(ArmadaFlyteError, ValueError):
    """A configuration value is wrong; the message names the field, the value and the fix."""

    def __init__(self, field: str, value: object, fix: str):
        self.field = field
        self.value = value
        self.fix = fix
        super().__init__(f"{cut(field, MAX_SHOWN_FIELD)}={shown(value)} is invalid: {cut(fix, MAX_SHOWN_FIX)}")


def invalid_config_from(exc: Any, origin: str = "", *, hidden: Iterable[str] = (), known: str = "") -> InvalidConfig:
    """The first problem of a pydantic `ValidationError` as `InvalidConfig`, naming where it is.

    `origin` (a file) prefixes the field's path; without one the field is the setting's name.
    Values of `hidden` fields (secrets) and of whole-document errors are never shown: the latter's
    input is every setting. `known` lists the allowed keys for an unknown-key error.
    """
    first = exc.errors()[0]
    location = ".".join(str(part) for part in first["loc"])
    field = f"{origin}: {location or '(top level)'}" if origin else (location or "connector settings")
    top = str(first["loc"][0]) if first["loc"] else ""
    value = "<not shown>" if not top or top in set(hidden) else first.get("input")
    fix = first["msg"].removeprefix("Value error, ")
    if first["type"] == "missing":
        value, fix = None, f"add the field {first['loc'][-1]!r}"
    elif first["type"] == "extra_forbidden":
        value = "<not shown>"  # an unknown key may be a typo'd secret (`auth_tokne: ...`)
        fix = f"{fix}: remove this unknown field" + (f" (known: {known})" if known else "")
    return InvalidConfig(field, value, fix)


def _a(word: str) -> str:
    """The article before `word` as said aloud: "an arm64", "an amd64", "a riscv64"."""
    return "an" if word[:1].lower() in "aeioux" else "a"


class ArchitectureNotOffered(ArmadaFlyteError, ValueError):
    """The task asks for an architecture the platform's node groups don't offer."""

    def __init__(self, architecture: str, offered: Iterable[str], source: str = "task"):
        self.architecture = architecture
        self.offered = sorted(offered)
        self.source = source
        offered_text = ", ".join(self.offered) or "none"
        super().__init__(
            f"architecture {architecture!r} (set by {source}) is not offered by this platform; "
            f"offered: {offered_text}. Set ArmadaConfig(architecture=...) to one of those, "
            f"or ask your platform admin to add {_a(architecture)} {architecture} node group to the node-group file."
        )


class NoCommonArchitecture(ArchitectureNotOffered):
    """`architecture="any"` or a preference, but no architecture is both in the task's image and offered by the
    platform (and, for a preference, in the task's list)."""

    def __init__(
        self,
        image: str,
        image_architectures: Iterable[str],
        offered: Iterable[str],
        source: str,
        known_by: str,
        asked: str = "any",
    ):
        self.architecture = asked
        self.image = image
        self.image_architectures = sorted(image_architectures)
        self.offered = sorted(offered)
        self.source = source
        image_text = ", ".join(self.image_architectures) or "no Linux amd64 or arm64 variant"
        offered_text = ", ".join(self.offered) or "none"
        ValueError.__init__(
            self,
            f"architecture {asked!r} (set by {source}) leaves nothing to run on: image {image!r} has {image_text} "
            f"(from {known_by}), and this platform offers {offered_text}. Build the image for one of "
            f"{offered_text} too (flyte.Image(..., platform=(...)) or `docker buildx build --platform ...`)"
            + (
                f", or ask your platform admin to add a node group for {image_text} to the node-group file."
                if self.image_architectures
                else "."
            ),
        )


class AcceleratorNotOffered(ArmadaFlyteError, ValueError):
    """The task asks for an accelerator (GPU model) or MIG partition the platform's node-group file doesn't offer."""

    def __init__(self, accelerator: str, offered: Iterable[str], partition: str = ""):
        self.accelerator = accelerator
        self.offered = sorted(offered)
        self.partition = partition
        offered_text = ", ".join(self.offered) or "none"
        if partition:
            message = (
                f"accelerator {accelerator!r} is offered, but not its MIG partition {partition!r}; "
                f"partitions offered: {offered_text}. Use one of those in flyte.GPU(..., partition=...), "
                f"drop the partition, or ask your platform admin to list {partition} under "
                f"accelerators.{accelerator}.partitions in the node-group file."
            )
        else:
            message = (
                f"accelerator {accelerator!r} (from flyte.Resources(gpu=...)) is not offered by this platform; "
                f"offered: {offered_text}. Request one of those, request a GPU count alone (gpu=1), "
                f"or ask your platform admin to add {accelerator} under accelerators in the node-group file."
            )
        super().__init__(message)


class ArchitectureConflict(ArmadaFlyteError, ValueError):
    """Two sources pin different architectures (pod template vs task, or members of one gang)."""


class GangCardinalityMismatch(ArmadaFlyteError, ValueError):
    """A gang's declared size differs from the members added to it: Armada would hold the members it got
    queued until the missing ones came, and they never would (or refuse the surplus)."""

    def __init__(self, gang: str, declared: int, members: int, declared_by: str):
        self.gang = gang
        self.declared = declared
        self.members = members
        self.declared_by = declared_by
        if members < declared:
            fix, armada = f"add the {declared - members} missing member(s)", f"hold them until all {declared} came"
        else:
            fix, armada = f"remove {members - declared} member(s)", f"refuse the members beyond {declared}"
        super().__init__(
            f"gang {gang!r}: {declared_by} declares {declared} members, but {members} were added; nothing was "
            f"submitted (Armada would {armada}). Either {fix}, or declare {members}, or leave the cardinality "
            "out: a Gang counts its members itself."
        )


class ImagePlatformMismatch(ArmadaFlyteError, ValueError):
    """The task's image was not built for the architecture the task runs on."""

    def __init__(self, task: str, image: str, platforms: Iterable[str], architecture: str):
        self.task = task
        self.image = image
        self.platforms = sorted(platforms)
        self.architecture = architecture
        platforms_text = ", ".join(self.platforms) or "none found"
        if architecture == "any":
            super().__init__(
                f"task {task!r} asks for architecture 'any' but image {image!r} is built for {platforms_text}, "
                f"none of them linux/amd64 or linux/arm64. Build it for those "
                f"(e.g. flyte.Image(..., platform=('linux/amd64', 'linux/arm64'))), or set one architecture."
            )
            return
        super().__init__(
            f"task {task!r} runs on {architecture} but image {image!r} is built for {platforms_text}. "
            f"Rebuild the image with linux/{architecture} among its platforms "
            f"(e.g. flyte.Image(..., platform=('linux/amd64', 'linux/arm64')) or "
            f"`docker buildx build --platform linux/amd64,linux/arm64`), "
            f"or set ArmadaConfig(architecture=...) to one the image has."
        )


class TenancyRefused(ArmadaFlyteError, ValueError):
    """A backend run asks for tenancy the admin's policy does not give it: a namespace, a queue, or a pod
    template's service account or privileged field. `setting` names the admin's setting that decides it."""

    def __init__(self, setting: str, env_name: str, what: str, value: object, allowed: str, fix: str):
        self.setting = setting
        self.what = what
        self.value = value
        self.allowed = allowed
        super().__init__(
            f"{what}={shown(value)} is not allowed in runs from the Flyte backend: the admin's {setting} "
            f"({env_name}) allows {cut(allowed, MAX_SHOWN_FIX)}. {cut(fix, MAX_SHOWN_FIX)}"
        )


class SubmissionRefused(ArmadaFlyteError):
    """Armada refused a submission (validation, permissions); retrying the same request won't help."""


class ArmadaUnavailable(ArmadaFlyteError):
    """Armada could not be reached after the configured retries."""


class ArmadaAuthError(ArmadaFlyteError):
    """Armada refused our credentials (UNAUTHENTICATED) or their permissions (PERMISSION_DENIED)."""


# ---- reading an image's platforms: a missing image is a definite answer, while an unreachable
# registry or refused credentials only mean "could not check". ----
class RegistryError(ArmadaFlyteError):
    """Base of every failure to read an image's platforms."""


class InvalidImageReference(RegistryError, ValueError):
    """The text is not an image reference (`[host[:port]/]repository[:tag][@digest]`)."""

    def __init__(self, reference: str, problem: str):
        self.reference = reference
        super().__init__(
            f"{shown(reference)} is not an image reference: {problem[:300]}. "
            f"Write it as [registry/]repository[:tag][@sha256:digest], "
            f"e.g. ghcr.io/org/app:1.2 or 127.0.0.1:5000/app@sha256:..."
        )


class ImageNotFound(RegistryError, LookupError):
    """The registry answered, and it has no such repository, tag or digest."""

    def __init__(self, reference: str, detail: str = ""):
        self.reference = reference
        suffix = f" ({detail})" if detail else ""
        super().__init__(
            f"image {shown(reference)} was not found in its registry{suffix}. "
            f"Check the repository name and tag, and push the image before running tasks with it "
            f"(`docker buildx build --platform linux/amd64,linux/arm64 --push -t {reference} ...`)."
        )


class RegistryAuthFailed(RegistryError):
    """The registry refused the credentials we had (or wanted some and we had none)."""

    def __init__(self, registry: str, reference: str, detail: str):
        self.registry = registry
        self.reference = reference
        super().__init__(
            f"registry {registry} refused access to {reference!r}: {detail}. "
            f"Log in with `docker login {registry}` (credentials are read from the Docker config, "
            f"~/.docker/config.json or $DOCKER_CONFIG/config.json) or pass credentials explicitly."
        )


class RegistryUnreachable(RegistryError, ConnectionError):
    """The registry could not be reached or did not answer usefully (network, TLS, 5xx)."""

    def __init__(self, registry: str, detail: str, hint: str = ""):
        self.registry = registry
        self.detail = detail
        fix = hint or (
            "Check the host and port, that the registry is running and reachable from here, "
            "and whether it speaks plain HTTP (then mark it insecure: --insecure, or the "
            "connector setting registry_insecure_hosts)."
        )
        super().__init__(f"registry {registry} could not be reached: {detail}. {fix}")


class RegistryProtocolError(RegistryError):
    """The registry answered with something the OCI distribution spec doesn't allow."""

    def __init__(self, registry: str, detail: str):
        self.registry = registry
        super().__init__(
            f"registry {registry} gave an answer we could not read: {detail}. "
            f"Check that the address points at a container registry (its API lives under /v2/)."
        )


class DockerDaemonUnavailable(RegistryError):
    """No Docker daemon answered, so the daemon path can't be used."""

    def __init__(self, detail: str):
        super().__init__(
            f"no Docker daemon answered: {detail}. Start Docker or point DOCKER_HOST at a running "
            f"daemon, or read the platforms straight from the registry instead (without --daemon)."
        )
