"""`armada-flyte image inspect|build`: thin argument handling over the images package."""

from __future__ import annotations

import argparse
import json
import pathlib
import sys
from typing import Any

from armada_flyte.admin.image_build import (
    DEFAULT_PYTHON_VERSION,
    BuildRequest,
    package_checkout,
    parse_platforms,
    pip_cert_from_environment,
    run_build,
)
from armada_flyte.registry.credentials import RegistryCredentials
from armada_flyte.registry.reference import ImageReference
from armada_flyte.task.runtime_image import RUNTIME_PLATFORMS

PASSWORD_ENV = "ARMADA_FLYTE_REGISTRY_PASSWORD"


def register(subparsers: Any) -> None:
    """Add `image` with its `inspect` and `build` subcommands."""
    image = subparsers.add_parser("image", help="inspect image platforms; build the multi-arch runtime image")
    commands = image.add_subparsers(dest="image_command", metavar="COMMAND")
    image.set_defaults(func=lambda args: _usage(image))

    inspect = commands.add_parser(
        "inspect",
        help="print the platforms an image supports, read from its registry",
        description="Print the platforms (os/arch[/variant]) an image reference supports. Credentials come "
        "from the Docker config (docker login) unless --username is given.",
    )
    inspect.add_argument(
        "reference", metavar="REF", help="image reference, e.g. ghcr.io/org/app:1.2 or 127.0.0.1:5000/app@sha256:..."
    )
    inspect.add_argument(
        "--insecure", action="store_true", help="reach the registry over plain HTTP (loopback registries always are)"
    )
    inspect.add_argument("--json", action="store_true", help="print JSON instead of one platform per line")
    inspect.add_argument(
        "--daemon", action="store_true", help="ask the Docker daemon (DOCKER_HOST) instead of the registry"
    )
    inspect.add_argument("--username", help=f"registry user; the password is read from stdin, or from ${PASSWORD_ENV}")
    inspect.set_defaults(func=_inspect)

    build = commands.add_parser(
        "build",
        help="build the generic task runtime image for several architectures with docker buildx",
        description="Build images/Dockerfile with docker buildx for every platform into one image index. "
        "From a checkout (editable install) a wheel of the checkout is built first and installed, otherwise "
        "armada-flyte comes from the package index at this version. Needs buildx and a builder that can build "
        "every platform: `docker buildx inspect --bootstrap [NAME]` tells.",
    )
    build.add_argument(
        "--tag", required=True, action="append", metavar="REF", help="image reference to tag (repeatable)"
    )
    build.add_argument(
        "--platform",
        default=",".join(RUNTIME_PLATFORMS),
        help=f"comma-separated platforms (default: {','.join(RUNTIME_PLATFORMS)})",
    )
    build.add_argument("--push", action="store_true", help="push the image index to the registry")
    build.add_argument(
        "--print",
        action="store_true",
        dest="print_only",
        help="print the exact commands (the wheel of the checkout, then docker buildx build) and exit",
    )
    build.add_argument(
        "--python",
        default=DEFAULT_PYTHON_VERSION,
        metavar="VERSION",
        help=f"Python version of the base image (default {DEFAULT_PYTHON_VERSION})",
    )
    build.add_argument(
        "--builder",
        help="buildx builder to use (default: the current one); its platforms are checked instead of local QEMU",
    )
    build.add_argument(
        "--base-image",
        metavar="REF",
        help="image Python runs on, any Debian-family image with python3 and its venv module "
        "(default: the official python:VERSION-slim-bookworm)",
    )
    build.add_argument(
        "--pip-cert",
        type=pathlib.Path,
        metavar="FILE",
        help="CA bundle pip trusts inside the build, given as the build secret pip-cert (default: $PIP_CERT, else "
        "$SSL_CERT_FILE, when it names a file); behind a TLS-inspecting proxy pass the host's bundle",
    )
    build.add_argument("--no-pip-cert", action="store_true", help="give pip no CA bundle of this machine")
    build.add_argument("--progress", default="auto", choices=("auto", "plain", "tty"), help="buildx progress output")
    build.set_defaults(func=_build)


def _usage(parser: argparse.ArgumentParser) -> int:
    parser.print_help()
    return 2


def _inspect(args: argparse.Namespace) -> int:
    reference = ImageReference.parse(args.reference)
    if args.daemon:
        from armada_flyte.registry.docker_platforms import platforms_via_docker

        auth = None
        if args.username:
            auth = {"username": args.username, "password": _password()}
        result = platforms_via_docker(reference, auth_config=auth)
    else:
        from armada_flyte.registry.client import image_platforms

        credentials = {}
        if args.username:
            credentials[reference.registry] = RegistryCredentials(args.username, _password())
        insecure = (reference.registry,) if args.insecure else ()
        result = image_platforms(reference, insecure_hosts=insecure, credentials=credentials)

    if args.json:
        print(json.dumps(result.as_dict(), indent=2))
    else:
        for platform in result.platforms:
            print(platform)
        if not result.platforms:
            print(f"{result.reference}: no platforms listed ({result.media_type or 'unknown type'})", file=sys.stderr)
    return 0


def _password() -> str:
    import os

    from_env = os.environ.get(PASSWORD_ENV)
    if from_env is not None:
        return from_env
    return sys.stdin.readline().rstrip("\r\n")


def _build(args: argparse.Namespace) -> int:
    request = BuildRequest(
        tags=tuple(args.tag),
        platforms=parse_platforms(args.platform),
        push=args.push,
        python_version=args.python,
        source=package_checkout(),
        builder=args.builder,
        progress=args.progress,
        base_image=args.base_image,
        pip_cert=None if args.no_pip_cert else (args.pip_cert or pip_cert_from_environment()),
    )
    if args.print_only:
        print(request.printable())
        return 0
    return run_build(request)
