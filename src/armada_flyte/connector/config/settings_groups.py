"""The connector's settings, grouped by what they are about; `settings.py` reads and composes them.

Each group is a small frozen model that checks its own fields, so the code that needs one group
(the blob store, the status view's limits) gets that group. A setting's name is still flat and
unique across groups: it is what users write to `configure(...)`, in the YAML file, and (as
`ARMADA_FLYTE_<NAME>`, plus the reference design's `ARMADA_URL` / `FLYTE_BLOB_*`) in the
environment; `env_names` says which variables each field is read from.
"""

from __future__ import annotations

import json
import pathlib
import re
import shlex
from typing import Annotated, Any, Optional
from urllib.parse import urlparse

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, SecretStr, field_validator, model_validator
from pydantic_settings import NoDecode

from armada_flyte.addresses import is_loopback
from armada_flyte.architecture import Architecture, parse_optional
from armada_flyte.connector.config.namespaces import check_namespace_template, check_placeholders
from armada_flyte.connector.config.node_groups import NodeGroups
from armada_flyte.errors import InvalidConfig
from armada_flyte.kube import secret_key_problem, secret_name_problem

ENV_PREFIX = "ARMADA_FLYTE_"
FALLBACK_SETTING = f"the connector setting fallback_architecture ({ENV_PREFIX}FALLBACK_ARCHITECTURE)"
"""How messages name the setting that overrides the node-group file's fallback architecture."""


def _env(name: str, *legacy: str) -> Any:
    return AliasChoices(name, f"{ENV_PREFIX}{name.upper()}", *legacy)


TextList = Annotated[tuple[str, ...], NoDecode]
"""A list setting; from the environment either a JSON list or comma-separated (`a:5000,b:5000`)."""
_TOKEN_TEXT = re.compile(r"[\x21-\x7e]+")
"""What an HTTP header (and so gRPC metadata) can carry in a bearer token: printable ASCII, no spaces."""


def _text_list(value: Any, split: Any = None) -> Any:
    if not isinstance(value, str):
        return value
    text = value.strip()
    if text.startswith("["):
        try:
            return json.loads(text)
        except ValueError:
            raise ValueError('write a JSON list of strings, e.g. ["a", "b"], or a comma-separated list') from None
    parts = split(text) if split else text.split(",")
    return tuple(part.strip() for part in parts if part.strip())


class _Group(BaseModel):
    """Every group: frozen, unknown names are errors, numbers finite (NaN and infinity refused, naming the field)."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True, allow_inf_nan=False)


class ArmadaConnection(_Group):
    """Where Armada is and how to reach it: transport, credentials, call bounds, its log and UI services."""

    armada_url: str = Field("localhost:50051", validation_alias=_env("armada_url", "ARMADA_URL"))
    """Armada gRPC endpoint, host:port."""
    armada_tls: bool = False
    """Use TLS to Armada (plaintext only when this is false)."""
    armada_ca_cert: Optional[pathlib.Path] = None
    """CA bundle for Armada's TLS certificate (system roots when unset)."""
    armada_allow_plaintext_auth: bool = False
    """Send credentials over plaintext gRPC to an Armada that is not on this machine (off: refused)."""
    auth_token: Optional[SecretStr] = None
    """Bearer token sent as `authorization: Bearer ...`."""
    auth_username: Optional[str] = None
    """Basic-auth user (with auth_password)."""
    auth_password: Optional[SecretStr] = None
    """Basic-auth password (with auth_username)."""
    auth_password_file: Optional[pathlib.Path] = None
    """File holding the basic-auth password (with auth_username), e.g. a real-Armada bed's 0600 file or a
    mounted Secret; read at start and again when Armada refuses it (a rotated password)."""
    oidc_token_url: Optional[str] = None
    """OAuth2 token endpoint for the client-credentials flow (or give oidc_provider_url)."""
    oidc_provider_url: Optional[str] = None
    """OIDC issuer whose discovery document names the token endpoint (armadactl's providerUrl)."""
    oidc_client_id: Optional[str] = None
    """Client id for the client-credentials flow."""
    oidc_client_secret: Optional[SecretStr] = None
    """Client secret (or oidc_client_secret_file)."""
    oidc_client_secret_file: Optional[pathlib.Path] = None
    """File holding the client secret, e.g. a mounted Kubernetes Secret; re-read at each refresh."""
    oidc_scopes: TextList = ()
    """Scopes asked for (comma-separated from the environment)."""
    auth_exec_cmd: Optional[str] = None
    """Command printing a bearer token on stdout, as armadactl's execAuth (e.g. a cloud CLI)."""
    auth_exec_args: TextList = ()
    """Arguments of auth_exec_cmd (from the environment: a JSON list, or split like a shell)."""
    auth_exec_cache_seconds: float = Field(60.0, ge=0)
    """How long a token the command printed is reused (0: run it for every call, as armadactl does)."""
    grpc_retries: int = Field(3, ge=0, le=10)
    """Retries of transient gRPC errors (UNAVAILABLE, DEADLINE_EXCEEDED) per call."""
    grpc_timeout_seconds: float = Field(30.0, gt=0)
    """Deadline of each gRPC call to Armada."""
    grpc_keepalive_seconds: float = Field(30.0, ge=10, le=7200)
    """How often the connector pings Armada on each channel (HTTP/2 keepalive; a ping unanswered for 10 s
    closes the connection, so a dead one is found). At least 10 s: Armada's server refuses pings more
    often than its keepaliveEnforcementPolicy.minTime (10 s by default) with GOAWAY too_many_pings; at most
    2 hours (gRPC's own default interval)."""
    binoculars_url: Optional[str] = None
    """Armada's Binoculars (log) service, host:port; unset: the Armada URL (the embedded server serves both)."""
    lookout_url_template: Optional[str] = None
    """Link to a job in Lookout, e.g. `https://lookout.example.com/jobs?job_id={job_id}`.

    Fields: job_id, queue, job_set_id."""

    @field_validator("oidc_scopes", mode="before")
    @classmethod
    def _comma_list(cls, value: Any) -> Any:
        return _text_list(value)

    @field_validator("auth_exec_args", mode="before")
    @classmethod
    def _shell_words(cls, value: Any) -> Any:
        return _text_list(value, shlex.split)

    @field_validator("auth_token", mode="after")
    @classmethod
    def _header_safe(cls, token: Optional[SecretStr]) -> Optional[SecretStr]:
        if token is None:
            return None
        text = token.get_secret_value().strip()  # a token file's trailing newline is no part of it
        if not _TOKEN_TEXT.fullmatch(text):
            raise ValueError(
                "a bearer token is printable ASCII without spaces or line breaks; check how it was pasted or mounted"
            )
        return SecretStr(text)

    @model_validator(mode="after")
    def _check(self) -> ArmadaConnection:
        if self.auth_password is not None and self.auth_password_file is not None:
            raise ValueError("give the basic-auth password once: auth_password or auth_password_file")
        if (self.auth_username is None) != (self.auth_password is None and self.auth_password_file is None):
            raise ValueError("auth_username and auth_password (or auth_password_file) go together")
        methods = [name for name, used in self.auth_methods().items() if used]
        if len(methods) > 1:
            several = "not both" if len(methods) == 2 else "not several"
            raise ValueError(f"use one way to authenticate to Armada ({' or '.join(methods)}), {several}")
        if self.armada_ca_cert is not None and not self.armada_tls:
            raise ValueError("armada_ca_cert needs armada_tls=true")
        self._check_oidc()
        if methods and not self.armada_tls and not self.armada_allow_plaintext_auth:
            if not is_loopback(self.armada_url):
                raise ValueError(
                    f"{methods[0]} would be sent in the clear to {self.armada_url}: set armada_tls=true "
                    "(ARMADA_FLYTE_ARMADA_TLS), or, if the network is private, accept that explicitly with "
                    "armada_allow_plaintext_auth=true (ARMADA_FLYTE_ARMADA_ALLOW_PLAINTEXT_AUTH)"
                )
        return self

    def auth_methods(self) -> dict[str, bool]:
        """Each way to authenticate to Armada, and whether it is set."""
        return {
            "auth_token": self.auth_token is not None,
            "auth_username/auth_password": self.auth_username is not None,
            "oidc_client_id (client credentials)": self.oidc_client_id is not None,
            "auth_exec_cmd": self.auth_exec_cmd is not None,
        }

    def _check_oidc(self) -> None:
        oidc = (self.oidc_token_url, self.oidc_provider_url, self.oidc_client_secret, self.oidc_client_secret_file)
        if self.oidc_client_id is None:
            if any(value is not None for value in oidc):
                raise ValueError("the client-credentials flow needs oidc_client_id too")
            return
        if (self.oidc_token_url is None) == (self.oidc_provider_url is None):
            raise ValueError("the client-credentials flow needs one of oidc_token_url or oidc_provider_url")
        if (self.oidc_client_secret is None) == (self.oidc_client_secret_file is None):
            raise ValueError("give the client secret once: oidc_client_secret or oidc_client_secret_file")
        url = self.oidc_token_url or self.oidc_provider_url or ""
        parsed = urlparse(url)
        if parsed.scheme not in ("https", "http") or not parsed.hostname:
            raise ValueError(f"{url[:200]!r} is not an http(s) URL of the identity provider")
        if parsed.scheme == "http" and not is_loopback(parsed.hostname) and not self.armada_allow_plaintext_auth:
            raise ValueError(
                f"the client secret would be sent in the clear to {parsed.hostname}: use an https:// URL, "
                "or set armada_allow_plaintext_auth=true"
            )


class BlobStore(_Group):
    """The blob store: where the pods reach it, the connector's own keys, and how pods get theirs."""

    blob_endpoint: str = Field("", validation_alias=_env("blob_endpoint", "FLYTE_BLOB_ENDPOINT"))
    """S3 endpoint the pods reach; injected into each pod as FLYTE_AWS_ENDPOINT."""
    blob_access_key: str = Field("", validation_alias=_env("blob_access_key", "FLYTE_BLOB_ACCESS_KEY"))
    """The connector's own access key, for reading error.pb; never given to a pod."""
    blob_secret_key: SecretStr = Field(SecretStr(""), validation_alias=_env("blob_secret_key", "FLYTE_BLOB_SECRET_KEY"))
    """The connector's own secret key, for reading error.pb; never given to a pod."""
    blob_region: str = "us-east-1"
    """Region of the blob store's bucket (the connector reads error.pb with it)."""
    blob_credentials_secret: str = ""
    """Kubernetes Secret, in the job's namespace, holding the pods' blob keys; each pod's
    FLYTE_AWS_ACCESS_KEY_ID / FLYTE_AWS_SECRET_ACCESS_KEY reference it (`secretKeyRef`)."""
    blob_credentials_access_key_key: str = "access_key_id"
    """The key of the access key inside blob_credentials_secret."""
    blob_credentials_secret_key_key: str = "secret_access_key"
    """The key of the secret key inside blob_credentials_secret."""
    blob_workload_identity: bool = False
    """Pods get no blob credentials at all: their service account grants access (IRSA, GKE Workload Identity)."""

    @model_validator(mode="after")
    def _pods_get_credentials_from_a_secret_or_their_account(self) -> BlobStore:
        """The pods' blob credentials come from a Secret or the service account, never as values."""
        if self.blob_credentials_secret and self.blob_workload_identity:
            raise ValueError("set blob_credentials_secret or blob_workload_identity, not both")
        if self.blob_credentials_secret:
            problem = secret_name_problem(self.blob_credentials_secret)
            if problem:
                raise ValueError(f"blob_credentials_secret names a Kubernetes Secret: {problem}")
            for key in (self.blob_credentials_access_key_key, self.blob_credentials_secret_key_key):
                problem = secret_key_problem(key)
                if problem:
                    raise ValueError(f"the blob_credentials_*_key settings are keys of a Kubernetes Secret: {problem}")
        has_keys = bool(self.blob_access_key or self.blob_secret_key.get_secret_value())
        if self.blob_endpoint and has_keys and not (self.blob_credentials_secret or self.blob_workload_identity):
            raise ValueError(
                "blob_access_key/blob_secret_key are the connector's own keys and never go into a job spec; say how "
                "the pods get theirs: blob_credentials_secret=<a Kubernetes Secret in the job namespace holding "
                "access_key_id and secret_access_key>, or blob_workload_identity=true (the pod's service account)"
            )
        return self


class JobTargets(_Group):
    """Where jobs go and what their pods are given: node groups, the namespace, task secrets' env names.

    (Named `Placement` before; `submit.placement.Placement` is one pod's scheduling constraints.)"""

    node_groups_file: Optional[pathlib.Path] = None
    """The platform admin's node-group YAML."""
    node_groups_preset: Optional[str] = None
    """A shipped preset (gke, eks-karpenter, aks, embedded, generic) when no file is given."""
    fallback_architecture: Optional[Architecture] = None
    """Overrides the node-group file's `fallback_architecture`: where tasks with a preference or `any` go when
    their image's platforms can't be read at submit (unset or empty: the file's)."""
    namespace_template: Optional[str] = None
    """Namespace of backend jobs whose task sets no ArmadaConfig.namespace: a fixed name (`flyte-jobs`) or
    a template of {project}, {domain}, {org}, {namespace} (the backend's), e.g. `{project}-{domain}`.

    Unset: the backend's namespace, else `default`. Local runs keep ArmadaConfig.namespace or `default`.
    A backend task's ArmadaConfig.namespace is used instead only when `allowed_namespaces` allows it."""
    secret_env_var_prefix: str = "_UNION_"
    """Prefix of task secrets' env vars (`<prefix><GROUP>_<KEY>`): your Flyte webhook's secretEnvVarPrefix."""
    platform_mismatch_categories: TextList = ()
    """Armada failure categories (comma-separated) that mean the image cannot run on the node's architecture: the
    names your Armada executor's error categories give such failures (Armada puts the category on the job's
    failed event). A task with an architecture preference whose job fails with one moves to its next
    architecture at once, as it does for an exec format error or a missing image variant."""

    @field_validator("platform_mismatch_categories", mode="before")
    @classmethod
    def _comma_list(cls, value: Any) -> Any:
        return _text_list(value)

    @field_validator("fallback_architecture", mode="before")
    @classmethod
    def _architecture(cls, value: Any) -> Any:
        try:
            return parse_optional(value, "fallback_architecture")
        except InvalidConfig as exc:
            raise ValueError(exc.fix) from None  # pydantic names the setting and the value

    @model_validator(mode="after")
    def _check(self) -> JobTargets:
        if self.node_groups_file is not None and self.node_groups_preset is not None:
            raise ValueError("set node_groups_file or node_groups_preset, not both")
        if self.namespace_template is not None:
            check_namespace_template(self.namespace_template)
        return self

    def node_groups(self) -> NodeGroups:
        """The node groups this connector places pods with (with this connector's fallback architecture, if set)."""
        groups = NodeGroups.load(self.node_groups_file, self.node_groups_preset)
        if self.fallback_architecture is None:
            return groups
        return groups.with_fallback(self.fallback_architecture, FALLBACK_SETTING)


class Tenancy(_Group):
    """What a task running from a Flyte backend may choose for itself: namespaces and queues beyond the
    admin's, a pod template's service account and privileged fields. Local runs are not held to it."""

    allowed_namespaces: TextList = ()
    """Globs of the namespaces a backend task's ArmadaConfig.namespace may name (comma-separated; placeholders
    {project}, {domain}, {org}, {namespace} as in namespace_template, e.g. `{project}-scratch`; a `*` after a
    placeholder also matches projects whose names extend it). Default: none, so
    backend jobs run where namespace_template (else the backend) puts them."""
    allowed_queues: TextList = ("*",)
    """Globs of the queues a backend task may submit to (same placeholders, e.g. `{project}`, `shared-*`).
    Default `*`: any queue."""
    allow_privileged_pod_templates: bool = False
    """Let a backend task's pod template name its own service account, or set hostNetwork, hostPID, hostIPC,
    privileged containers, added capabilities, host ports or hostPath volumes (off: such a task is refused)."""

    @field_validator("allowed_namespaces", "allowed_queues", mode="before")
    @classmethod
    def _comma_list(cls, value: Any) -> Any:
        return _text_list(value)

    @model_validator(mode="after")
    def _check(self) -> Tenancy:
        for setting in ("allowed_namespaces", "allowed_queues"):
            for glob in getattr(self, setting):
                check_placeholders(setting, glob, "'{project}-*'")
        return self


class Timeouts(_Group):
    """How long the connector waits: between polls of local runs, for Armada, for the blob store, for reports;
    and what a local run prints while it waits."""

    stream_task_logs: bool = True
    """Local runs print each task's log lines as they arrive, prefixed `[task#attempt]` (false: only the table)."""
    poll_interval_seconds: float = Field(3.0, gt=0)
    """Longest wait between status polls in local runs (polling starts at once and backs off to it)."""
    first_poll_seconds: float = Field(0.05, gt=0)
    """First wait between status polls in local runs."""
    ack_timeout_seconds: float = Field(300.0, gt=0)
    """How long a just-submitted job may read UNKNOWN before it is treated as lost."""
    error_read_timeout_seconds: float = Field(8.0, gt=0)
    """Bound on reading a0's error.pb, so a poll never hangs on the blob store."""
    error_read_grace_seconds: float = Field(60.0, ge=0)
    """How long after a job ends an unreadable error.pb keeps the task waiting (then Armada's state counts)."""
    queued_report_after_seconds: float = Field(60.0, ge=0)
    """How long a job may stay queued before the connector asks Armada's scheduler why (its job report)."""
    queued_report_refresh_seconds: float = Field(30.0, gt=0)
    """Least time between two scheduler reports for one job; polls in between reuse the last one."""


class Limits(_Group):
    """How much the connector asks of Armada at once: event streams, bulk status rounds, submit and cancel batches."""

    status_event_streams: bool = True
    """Follow job sets' event streams for job states (else: bulk GetJobStatus only)."""
    status_streams_max: int = Field(32, ge=0)
    """Most job-set event streams one connector watches at once; other job sets are polled in bulk."""
    status_batch_window_seconds: float = Field(0.02, gt=0, le=5)
    """How long a get for a job the status view doesn't know waits for others to share one bulk call."""
    status_refresh_seconds: float = Field(3.0, gt=0)
    """How often jobs of job sets without a live event stream are refreshed in bulk."""
    status_idle_seconds: float = Field(600.0, gt=0)
    """A job (or job set) nobody asks about for this long leaves the status view."""
    status_stream_max_age_seconds: float = Field(300.0, ge=1)
    """A job-set event stream older than this is closed and opened again from its last message (its jobs
    polled in bulk meanwhile): a connection that stopped forwarding without closing can't freeze states longer.
    At least 1 s: each re-open reads the job set's events again, so a tiny value would spin."""
    status_live_check_seconds: float = Field(60.0, gt=0)
    """How often the jobs of a job set with a live event stream are also checked in bulk (GetJobStatus)."""
    status_ended_keep_seconds: float = Field(30.0, gt=0)
    """A job that ended stays in the status view this long after it was last asked about, so the polls
    that follow its end (while its error file is awaited) cost no call."""
    submit_batch_window_seconds: float = Field(0.005, ge=0, le=5)
    """Creates to one queue and job set share one SubmitJobs call. A lone create (none came for its job set
    this long before it) goes out as soon as the connector's event loop has no other create for it; creates
    coming one after another, each within this long of the one before, go out once one is this long late..."""
    submit_batch_max_wait_seconds: float = Field(0.05, ge=0, le=5)
    """...or this long after the first of them; and while the job set's previous call is on its way, they
    wait for it to return."""
    submit_batch_max_items: int = Field(100, ge=1, le=1000)
    """Most items in one SubmitJobs call."""
    submit_batch_max_in_flight: int = Field(1, ge=1, le=16)
    """SubmitJobs calls on their way at once for one job set; its next creates gather meanwhile."""
    cancel_batch_window_seconds: float = Field(0.1, ge=0, le=5)
    """Deletes to one queue and job set share one CancelJobs call until none came for this long (an abort
    deletes all its tasks at once, and nothing waits on a delete as on a create)..."""
    cancel_batch_max_wait_seconds: float = Field(2.0, ge=0, le=30)
    """...or until this long after the first of them."""


class ImageChecks(_Group):
    """Whether and how an image's platforms are looked up in its registry before submitting."""

    check_image_platforms: bool = False
    """Look up the image's platforms in its registry before submitting."""
    image_check_blocks_when_unreachable: bool = False
    """Refuse submission when the registry can't be reached (else: warn and submit). A task with a preference or
    `any` that the fallback architecture applies to is narrowed to it instead (`fallback_architecture`)."""
    image_platform_cache_seconds: float = Field(300.0, ge=0)
    """How long an image's platforms are remembered (0: ask the registry every time)."""
    registry_insecure_hosts: TextList = ()
    """Registries reached over plain HTTP (e.g. 127.0.0.1:5000)."""

    @field_validator("registry_insecure_hosts", mode="before")
    @classmethod
    def _comma_list(cls, value: Any) -> Any:
        return _text_list(value)


def env_names(group: type[BaseModel], name: str) -> tuple[str, ...]:
    """The environment variables a group's field is read from, preferred first."""
    alias = group.model_fields[name].validation_alias
    if isinstance(alias, AliasChoices):
        return tuple(str(choice) for choice in alias.choices if str(choice).isupper())
    return (f"{ENV_PREFIX}{name.upper()}",)
