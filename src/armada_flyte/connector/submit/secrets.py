"""A task's `flyte.Secret`s as the pod's env and volumes, named as Flyte's Kubernetes secret injector
names them, so a task reads its secrets on Armada exactly where it reads them on a stock Flyte pod.

The template's `security_context.secrets` carries group, key, mount requirement and env var name.
Flyte's K8s injector (flyteorg/flyte `flyteplugins/go/tasks/pluginmachinery/secret/k8s_secrets.go`
and `utils.go`) reads the key `key` of the Kubernetes Secret named `group` in the pod's namespace:

- ENV_VAR: `<prefix><GROUP>_<KEY>` (upper-cased; prefix `_UNION_` by default, the
  `secretEnvVarPrefix` of Flyte's webhook) from a `secretKeyRef`, the same value again under the
  secret's own env var name (`flyte.Secret(as_env_var=...)`, which the SDK always fills), and
  `FLYTE_SECRETS_ENV_PREFIX` holding the prefix.
- FILE or ANY: a `secret` volume mounted read-only at `/etc/flyte/secrets/<group>` with the key as
  file `<key>` (both lower-cased), `FLYTE_SECRETS_DEFAULT_DIR` and an empty
  `FLYTE_SECRETS_FILE_PREFIX`; with an env var name, that variable holds the file's path.
- No group: the Secret is named by the md5 of the key, as Flyte's secret service names it.

One deliberate difference: Flyte marks these references optional, so a missing Secret reaches the
task as a missing variable. Here they are required: the pod fails to start with Kubernetes' own
reason (`secret "x" not found`), which says what is wrong.
"""

from __future__ import annotations

import hashlib
import posixpath
from dataclasses import dataclass, field
from typing import Any, Iterable

from armada_flyte.errors import InvalidConfig
from armada_flyte.kube import secret_key_problem, secret_name_problem

SECRETS_DIR = "/etc/flyte/secrets"
"""Where Flyte mounts file secrets (the only mount path `flyte.Secret(mount=...)` accepts)."""
DEFAULT_ENV_PREFIX = "_UNION_"
"""The default `secretEnvVarPrefix` of Flyte 2's secret webhook."""
ENV_PREFIX_VAR = "FLYTE_SECRETS_ENV_PREFIX"
DEFAULT_DIR_VAR = "FLYTE_SECRETS_DEFAULT_DIR"
FILE_PREFIX_VAR = "FLYTE_SECRETS_FILE_PREFIX"

_ANY, _ENV_VAR, _FILE = 0, 1, 2
_VOLUME_PREFIX = "flyte-secret-"


@dataclass(frozen=True)
class SecretMounts:
    """What a task's secrets add to its pod: env entries, secret volumes and their mounts (all as
    dicts in the JSON shape of Armada's Kubernetes proto, which spells out `localObjectReference` and
    `volumeSource`)."""

    env: tuple[dict[str, Any], ...] = ()
    volumes: tuple[dict[str, Any], ...] = ()
    volume_mounts: tuple[dict[str, Any], ...] = ()

    def __bool__(self) -> bool:
        return bool(self.env or self.volumes)


@dataclass
class _Collected:
    """The mounts while a template's secrets are read, one at a time."""

    env: list[dict[str, Any]] = field(default_factory=list)
    volumes: list[dict[str, Any]] = field(default_factory=list)
    volume_mounts: list[dict[str, Any]] = field(default_factory=list)

    def add_env(self, entry: dict[str, Any]) -> None:
        self.env = [e for e in self.env if e["name"] != entry["name"]] + [entry]

    def add_file(self, group: str, key: str) -> None:
        """The key as a file in its group's volume (one volume per Secret, as Flyte does)."""
        volume = next((v for v in self.volumes if v["volumeSource"]["secret"]["secretName"] == group), None)
        if volume is None:
            name = _VOLUME_PREFIX + hashlib.sha256(group.encode()).hexdigest()[:16]
            volume = {"name": name, "volumeSource": {"secret": {"secretName": group, "items": []}}}
            self.volumes.append(volume)
            self.volume_mounts.append(
                {"name": name, "mountPath": posixpath.join(SECRETS_DIR, group.lower()), "readOnly": True}
            )
        items = volume["volumeSource"]["secret"]["items"]
        if not any(item["key"] == key for item in items):
            items.append({"key": key, "path": key.lower()})


def secret_key_ref(name: str, key: str) -> dict[str, Any]:
    """An env var's `valueFrom` reading `key` of Secret `name`, in the shape of Armada's pod-spec proto."""
    return {"secretKeyRef": {"localObjectReference": {"name": name}, "key": key}}


def kubernetes_secret_name(group: str, key: str) -> str:
    """The Kubernetes Secret a Flyte secret lives in: its group, or the md5 of its key when it has none."""
    return group or hashlib.md5(key.encode()).hexdigest()  # noqa: S324 - a name, as Flyte derives it


def secret_mounts(security_context: Any, env_prefix: str = DEFAULT_ENV_PREFIX) -> SecretMounts:
    """The env and volumes for a template's `security_context` (a flyteidl2 SecurityContext, or None).

    Anything Kubernetes Secrets can't express raises InvalidConfig naming the secret: a secret is
    mounted as asked or the task is refused, never dropped.
    """
    if security_context is None:
        return SecretMounts()
    if len(security_context.tokens):
        raise InvalidConfig(
            "security_context.tokens",
            [t.name for t in security_context.tokens],
            "OAuth2 token requests can't be mounted into an Armada pod; remove them, or pass the token as a "
            "flyte.Secret",
        )
    mounts = _Collected()
    for secret in security_context.secrets:
        _add(mounts, secret, env_prefix)
    return SecretMounts(tuple(mounts.env), tuple(mounts.volumes), tuple(mounts.volume_mounts))


def _add(mounts: _Collected, secret: Any, env_prefix: str) -> None:
    described = f"flyte.Secret(key={secret.key!r}, group={secret.group!r})"
    if not secret.key:
        raise InvalidConfig("flyte.Secret.key", "", "a secret needs a key: the key's name inside its Kubernetes Secret")
    problem = secret_key_problem(secret.key)
    if problem:
        raise InvalidConfig(
            f"{described}.key", secret.key, f"a Kubernetes Secret's keys allow only these characters: {problem}"
        )
    group = kubernetes_secret_name(secret.group, secret.key)
    problem = secret_name_problem(group)
    if problem:
        raise InvalidConfig(
            f"{described}.group",
            secret.group,
            f"the group names the Kubernetes Secret in the job's namespace, so it must be a valid Secret name: "
            f"{problem}; rename the Secret and the group (e.g. {group.lower().replace('_', '-')!r})",
        )
    if secret.group_version:
        raise InvalidConfig(
            f"{described}.group_version",
            secret.group_version,
            "Kubernetes Secrets have no versions; remove group_version (the Secret's current value is mounted)",
        )
    reference = secret_key_ref(group, secret.key)
    requirement = int(secret.mount_requirement)
    if requirement == _ENV_VAR:
        mounts.add_env({"name": f"{env_prefix}{group}_{secret.key}".upper(), "valueFrom": reference})
        if secret.env_var:
            mounts.add_env({"name": secret.env_var, "valueFrom": reference})
        mounts.add_env({"name": ENV_PREFIX_VAR, "value": env_prefix})
    elif requirement in (_ANY, _FILE):
        mounts.add_file(group, secret.key)
        mounts.add_env({"name": DEFAULT_DIR_VAR, "value": SECRETS_DIR})
        mounts.add_env({"name": FILE_PREFIX_VAR, "value": ""})
        if secret.env_var:
            path = posixpath.join(SECRETS_DIR, group.lower(), secret.key.lower())
            mounts.add_env({"name": secret.env_var, "value": path})
    else:
        raise InvalidConfig(
            f"{described}.mount_requirement", requirement, "use ENV_VAR or FILE (as_env_var= or mount= on flyte.Secret)"
        )


def check_secret_mounts(
    mounts: SecretMounts, env: Iterable[str], volume_mounts: Iterable[Any], volumes: Iterable[Any]
) -> None:
    """Refuse a secret env var that would replace what a0 needs (`env`: the blob store's names), and a
    secret mount path or volume name the pod already uses. A secret env var replacing another the task
    set is fine (Flyte's injector does the same)."""
    if not mounts:
        return
    clash = sorted({entry["name"] for entry in mounts.env} & set(env))
    if clash:
        raise InvalidConfig(
            "flyte.Secret.as_env_var",
            clash[0],
            "that variable carries the blob store's settings to a0; mount the secret under another name",
        )
    taken_paths = {m.get("mountPath") for m in volume_mounts}
    taken_volumes = {v.get("name") for v in volumes}
    for mount in mounts.volume_mounts:
        if mount["mountPath"] in taken_paths or mount["name"] in taken_volumes:
            raise InvalidConfig(
                "pod_template.volumeMounts",
                mount["mountPath"],
                "Flyte's file secrets are mounted there; move the pod template's own volume elsewhere",
            )
