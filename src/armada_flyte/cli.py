"""`armada-flyte` command line: thin, each subcommand lives beside the library code it drives."""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import Optional, Sequence

# Each module exposes `register(subparsers)`, adding its subcommand with `func` set.
_SUBCOMMAND_MODULES = (
    "armada_flyte.dev.command",
    "armada_flyte.images.command",
    "armada_flyte.doctor.command",
    "armada_flyte.dry_run_command",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="armada-flyte",
        description="Run Flyte 2 tasks as Armada jobs on the right CPU architecture.",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module_name in _SUBCOMMAND_MODULES:
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name and exc.name.startswith("armada_flyte"):
                continue  # a subcommand not built yet
            raise
        module.register(subparsers)
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    from armada_flyte.errors import ArmadaFlyteError

    try:
        return int(args.func(args) or 0)
    except ArmadaFlyteError as exc:
        print(f"armada-flyte: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # output piped into `head` and the like: stop quietly
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141  # as a shell reports a command ended by SIGPIPE


if __name__ == "__main__":
    sys.exit(main())
