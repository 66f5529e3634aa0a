"""The variables Kubernetes injects into a namespace's pods for each Service (enableServiceLinks)."""

from __future__ import annotations


def service_link_env(service: dict, host: str = "10.96.0.12") -> dict[str, str]:
    """The variables Kubernetes injects into pods of the namespace for `service` (its documented scheme)."""
    prefix = service["metadata"]["name"].upper().replace("-", "_")
    env = {f"{prefix}_SERVICE_HOST": host}
    for index, port in enumerate(service["spec"]["ports"]):
        number, proto = port["port"], port.get("protocol", "TCP")
        if index == 0:
            env[f"{prefix}_SERVICE_PORT"] = str(number)
            env[f"{prefix}_PORT"] = f"{proto.lower()}://{host}:{number}"
        env[f"{prefix}_SERVICE_PORT_{port['name'].upper()}"] = str(number)
        base = f"{prefix}_PORT_{number}_{proto}"
        env[base] = f"{proto.lower()}://{host}:{number}"
        env.update({f"{base}_PROTO": proto.lower(), f"{base}_PORT": str(number), f"{base}_ADDR": host})
    return env
