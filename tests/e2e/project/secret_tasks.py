"""A task reading its Flyte secrets inside its pod, as a stock Flyte pod would: by env var and as a file."""

from __future__ import annotations

import os
import pathlib

import flyte

from armada_flyte import ArmadaConfig

IMAGE = "localhost:5000/armada-flyte-runtime:test"
GROUP = "e2e-task-creds"

env = flyte.TaskEnvironment(
    "e2e-secrets",
    image=IMAGE,
    resources=flyte.Resources(cpu="250m", memory="256Mi"),
    plugin_config=ArmadaConfig(),
    secrets=[
        flyte.Secret(key="api_key", group=GROUP, as_env_var="E2E_API_KEY"),
        flyte.Secret(key="token", group=GROUP, mount=pathlib.Path("/etc/flyte/secrets")),
    ],
)


@env.task
async def read_secrets() -> list[str]:
    """The env secret under its own name and Flyte's prefixed one, and the file secret's content."""
    prefixed = os.environ[os.environ["FLYTE_SECRETS_ENV_PREFIX"] + f"{GROUP}_API_KEY".upper()]
    token_file = pathlib.Path(os.environ["FLYTE_SECRETS_DEFAULT_DIR"], GROUP, "token")
    return [os.environ["E2E_API_KEY"], prefixed, token_file.read_text()]
