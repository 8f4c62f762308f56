"""``python -m book.classroom.hub COMMAND``: the class server's commands (see the package's
docstring and the teacher's guide); ``make hub``, ``make hub-users`` … call them."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from . import CONFIG, accounts, backup, course, install, serve, setup, stop
from .collect import collect
from .settings import SettingsError, load

COMMANDS = {
    "up": "set everything up, then start the hub (make hub)",
    "setup": "set everything up without starting the hub",
    "serve": "start the hub in the foreground (Ctrl-C stops it)",
    "users": "create the accounts of new roster lines (first passwords in HUB_DIR/state)",
    "course": "publish the course again (after a change to the book or the assignments)",
    "links": "print the link of every chapter and assignment",
    "collect": "copy every student's assignments into --out, for make grade",
    "stop": "stop a hub started in the background",
    "backup": "write the homes, the hub's state and the roster to --out (a .tar.gz)",
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m book.classroom.hub",
                                     description="The class server (JupyterHub).")
    parser.add_argument("command", choices=list(COMMANDS),
                        help="; ".join(f"{k}: {v}" for k, v in COMMANDS.items()))
    parser.add_argument("--config", type=Path, default=CONFIG,
                        help="the hub's configuration file (default: hub/jupyterhub_config.py)")
    parser.add_argument("--out", type=Path, help="collect: a folder; backup: a .tar.gz file")
    args = parser.parse_args(argv)
    try:
        settings = load(args.config)
        if args.command in ("collect", "backup") and args.out is None:
            parser.error(f"{args.command} needs --out")
        if args.command in ("up", "setup"):
            setup(settings)
        if args.command in ("up", "serve"):
            serve(settings)   # does not return
        elif args.command == "users":
            install.require_root()
            install.prepare_dirs(settings)
            accounts.ensure_accounts(settings)
        elif args.command == "course":
            install.require_root()
            course.publish(settings) or print("The course is unchanged")
        elif args.command == "links":
            for what, url in course.links(settings):
                print(f"{what}: {url}")
        elif args.command == "collect":
            install.require_root()
            written = collect(settings, args.out)
            total = sum(len(v) for v in written.values())
            print(f"Collected {total} notebook(s) of {len(written)} student(s) into {args.out}; "
                  f"grade them with: make grade SUBMISSIONS={args.out}")
        elif args.command == "stop":
            stop(settings)
        elif args.command == "backup":
            backup(settings, args.out)
    except (SettingsError, install.HubError, FileNotFoundError) as err:
        print(f"make hub: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
