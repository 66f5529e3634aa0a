"""The admin's namespace mapping (a fixed namespace, or a template over the backend's identity), and the
admin's allow-lists of namespaces and queues: globs over the same placeholders."""

from __future__ import annotations

import fnmatch
import functools
import string

from armada_flyte.errors import InvalidConfig

RENDERED_KEPT = 1024
"""How many rendered glob lists and matches are kept (least recently used first out): a fan-out's creates
share one identity, so each of them renders and matches the admin's globs as the first one did."""
NAMESPACE_FIELDS = ("project", "domain", "org", "namespace")
"""Placeholders of the `namespace_template`, `allowed_namespaces` and `allowed_queues` settings (`namespace`
is the backend's own)."""


def check_namespace_template(template: str) -> None:
    """Refuse placeholders other than {project}, {domain}, {org}, {namespace} (and stray braces)."""
    check_placeholders("namespace_template", template, "'{project}-{domain}'")


def check_placeholders(setting: str, text: str, example: str) -> None:
    """Refuse placeholders other than NAMESPACE_FIELDS (and stray braces) in `setting`'s value `text`."""
    try:
        names = [name for _, name, _, _ in string.Formatter().parse(text) if name is not None]
    except ValueError as exc:
        raise InvalidConfig(setting, text, f"{exc}; write e.g. {example}") from None
    unknown = sorted(set(names) - set(NAMESPACE_FIELDS))
    if unknown:
        raise InvalidConfig(setting, text, f"unknown placeholders {unknown}; use {', '.join(NAMESPACE_FIELDS)}")


def render_namespace(template: str, project: str, domain: str, org: str, namespace: str) -> str:
    """The template filled in, lower-cased as Kubernetes namespaces are."""
    return template.format(project=project, domain=domain, org=org, namespace=namespace).lower()


@functools.lru_cache(maxsize=RENDERED_KEPT)
def render_globs(patterns: tuple[str, ...], project: str, domain: str, org: str, namespace: str) -> tuple[str, ...]:
    """Each glob with its placeholders filled in; a filled-in value matches only itself (its `*`, `?`, `[`
    are escaped), so an identity can't widen the admin's pattern."""
    values = {name: _escaped(value) for name, value in zip(NAMESPACE_FIELDS, (project, domain, org, namespace))}
    return tuple(pattern.format(**values) for pattern in patterns)


@functools.lru_cache(maxsize=RENDERED_KEPT)
def first_match(value: str, globs: tuple[str, ...]) -> str:
    """The first filled-in glob `value` matches (case-sensitive), "" when none does."""
    return next((glob for glob in globs if fnmatch.fnmatchcase(value, glob)), "")


def _escaped(value: str) -> str:
    return "".join(f"[{c}]" if c in "*?[" else c for c in value)
