"""`armada-flyte` command line: thin, each subcommand lives beside the library code it drives."""

from __future__ import annotations

import argparse
import os
import sys
from typing import NoReturn, Optional, Sequence

from armada_flyte.admin import (
    c0_command,
    dev_command,
    dry_run_command,
    executor_command,
    image_command,
    logs_command,
    node_agent_command,
    view_command,
)
from armada_flyte.admin.doctor import command as doctor_command
from armada_flyte.errors import ArmadaFlyteError

# Each module exposes `register(subparsers)`, adding its subcommand with `func` set.
_SUBCOMMANDS = (
    dev_command,
    view_command,
    logs_command,
    executor_command,
    node_agent_command,
    c0_command,
    image_command,
    doctor_command,
    dry_run_command,
)


class _Parser(argparse.ArgumentParser):
    """argparse, with usage errors cut short: it quotes a bad argument whole, however long."""

    def error(self, message: str) -> NoReturn:
        super().error(message if len(message) <= 500 else message[:497] + "...")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="armada-flyte",
        description="Run Flyte 2 tasks as Armada jobs on the right CPU architecture.",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in _SUBCOMMANDS:
        module.register(subparsers)
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except ArmadaFlyteError as exc:
        print(f"armada-flyte: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # output piped into `head` and the like: stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141  # as a shell reports a command ended by SIGPIPE


if __name__ == "__main__":
    sys.exit(main())
