"""The admin's namespace mapping: a fixed namespace, or a template over the backend's identity."""

from __future__ import annotations

import string

from armada_flyte.errors import InvalidConfig

NAMESPACE_FIELDS = ("project", "domain", "org", "namespace")
"""Placeholders of the `namespace_template` setting (`namespace` is the backend's own)."""


def check_namespace_template(template: str) -> None:
    """Refuse placeholders other than {project}, {domain}, {org}, {namespace} (and stray braces)."""
    try:
        names = [name for _, name, _, _ in string.Formatter().parse(template) if name is not None]
    except ValueError as exc:
        raise InvalidConfig("namespace_template", template, f"{exc}; write e.g. '{{project}}-{{domain}}'") from None
    unknown = sorted(set(names) - set(NAMESPACE_FIELDS))
    if unknown:
        raise InvalidConfig(
            "namespace_template", template, f"unknown placeholders {unknown}; use {', '.join(NAMESPACE_FIELDS)}"
        )


def render_namespace(template: str, project: str, domain: str, org: str, namespace: str) -> str:
    """The template filled in, lower-cased as Kubernetes namespaces are."""
    return template.format(project=project, domain=domain, org=org, namespace=namespace).lower()
