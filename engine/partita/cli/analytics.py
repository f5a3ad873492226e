"""`partita analytics | instances | incidents [list]`: run the analytics, query their figures.

`partita analytics` runs the faust app of `partita.analytics`; `instances` and `incidents` read
the JSON it serves (`--url`, default http://127.0.0.1:6066) and print tables.

- `PARTITA_ANALYTICS_HOST` (`127.0.0.1`; `--bind` wins): the address the page listens on.
- `PARTITA_ANALYTICS_TOKEN` (none; `--token` wins): the page's access token. `partita
  analytics` then answers 401 to any request without it, and `instances`/`incidents` send it.
  Prefer the variable: a `--token` on the command line is visible to every local user.
"""

from __future__ import annotations

import argparse
import json
import os
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from partita.cli.common import Subcommands, add_command, build_config, progress
from partita.config import Config, KafkaRole
from partita.config.settings import ANALYTICS_HOST, ANALYTICS_TOKEN
from partita.errors import PartitaError
from partita.log.security import kafka_access

if TYPE_CHECKING:
    from partita.analytics.app import AnalyticsSettings

DEFAULT_PORT = 6066
DEFAULT_HOST: str = ANALYTICS_HOST.default
DEFAULT_URL = f"http://127.0.0.1:{DEFAULT_PORT}"
STATES = ("active", "completed", "terminated")
HOST_VARIABLE = ANALYTICS_HOST.env
TOKEN_VARIABLE = ANALYTICS_TOKEN.env

ANALYTICS_EPILOG = """\
examples:
  partita analytics                      # http://127.0.0.1:6066/ for the local broker
  partita analytics --port 7000 --bind 0.0.0.0 --bootstrap-servers kafka:9092
  PARTITA_ANALYTICS_TOKEN=$(python -c 'import secrets; print(secrets.token_urlsafe(32))') \\
    partita analytics --bind 0.0.0.0     # every request needs the token
  curl -H "Authorization: Bearer $PARTITA_ANALYTICS_TOKEN" http://127.0.0.1:6066/api/summary
  open "http://127.0.0.1:6066/?token=$PARTITA_ANALYTICS_TOKEN"   # a browser: ?token=
  PARTITA_KAFKA_CONFIG_ANALYTICS=analytics.properties partita analytics   # its own principal
  PARTITA_DOWNSTREAM_GROUPS=partita.analytics partita worker   # keep the log for analytics

The page listens on 127.0.0.1 unless --bind (PARTITA_ANALYTICS_HOST) says otherwise. With a
token (PARTITA_ANALYTICS_TOKEN, or --token; at least 16 characters) every page and JSON
endpoint answers 401 without `Authorization: Bearer <token>` or `?token=<token>`.

Kafka: the analytics role's properties (PARTITA_KAFKA_CONFIG, then
PARTITA_KAFKA_CONFIG_ANALYTICS) with SASL PLAIN, SCRAM-SHA-256/512, TLS or mTLS (PEM
certificates); OAUTHBEARER and GSSAPI are not available to the analytics.

The consumer group is <namespace>.analytics. It reads the log from its start (read_committed)
and keeps its tables under --data-dir (default <PARTITA_HOME>/analytics). Endpoints: /,
/api/summary, /api/processes, /api/elements, /api/jobs, /api/incidents, /api/instances,
/api/timeline.
"""

INSTANCES_EPILOG = """\
examples:
  partita instances                              # newest 20, active and recently ended
  partita instances --state active --process order
  partita instances --limit 100 --json           # the raw JSON of /api/instances

Needs `partita analytics` running (--url, default http://127.0.0.1:6066); sends its token
(PARTITA_ANALYTICS_TOKEN or --token) when it requires one.
"""

INCIDENTS_EPILOG = """\
examples:
  partita incidents                   # open incidents (same as `partita incidents list`)
  partita incidents list --process order
  partita incidents resolve 2251799813685262

Listing needs `partita analytics` running (--url, default http://127.0.0.1:6066);
resolving sends a RESOLVE command to the engine.
"""


# -- partita analytics ------------------------------------------------------------------------


def cmd_analytics(args: argparse.Namespace) -> int:
    from partita.analytics.app import run

    config = build_config(args)
    settings = analytics_settings(config, args, os.environ)
    print(
        f"Analytics of {settings.log_topic} at {config.bootstrap}: {settings.url}"
        f" (group {settings.group}, tables in {settings.data_dir / settings.group})"
        + (", token required" if settings.token else ""),
        flush=True,
    )
    if settings.token is None and settings.bind not in ("127.0.0.1", "localhost", "::1"):
        progress(
            f"Note: the analytics page listens on {settings.bind} without a token; anyone who"
            f" reaches the port can read it. Set {TOKEN_VARIABLE} to require one."
        )
    if settings.group not in config.downstream_groups:
        progress(
            f"Note: PARTITA_DOWNSTREAM_GROUPS does not list {settings.group}; engine workers may"
            " truncate log records before the analytics have read them."
        )
    return run(settings, loglevel=args.log_level)


def analytics_settings(
    config: Config, args: argparse.Namespace, env: Mapping[str, str]
) -> AnalyticsSettings:
    """The analytics' settings from the config, the flags and the environment (flags win)."""
    from partita.analytics.app import AnalyticsSettings
    from partita.analytics.web_token import check_token

    token = args.token or ANALYTICS_TOKEN.read(env)
    return AnalyticsSettings(
        access=kafka_access(config, KafkaRole.ANALYTICS),
        namespace=config.namespace,
        partitions=config.partitions,
        data_dir=(args.data_dir or config.home / "analytics").expanduser().resolve(),
        port=args.web_port,
        bind=args.bind or ANALYTICS_HOST.read(env),
        replication_factor=config.replication_factor,
        token=check_token(token) if token is not None else None,
    )


# -- querying the running analytics -----------------------------------------------------------


def fetch(
    url: str, path: str, params: dict[str, object] | None = None, token: str | None = None
) -> Any:
    """GET `path` from the analytics at `url` and decode its JSON, sending `token` (else
    PARTITA_ANALYTICS_TOKEN) as a bearer token; PartitaError if unreachable or refused."""
    query = urllib.parse.urlencode({k: v for k, v in (params or {}).items() if v is not None})
    address = url.rstrip("/") + path + (f"?{query}" if query else "")
    token = token or ANALYTICS_TOKEN.read()
    request = urllib.request.Request(address)
    if token:
        request.add_header("Authorization", f"Bearer {token.strip()}")
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return json.loads(response.read())
    except urllib.error.HTTPError as error:
        if error.code == 401:
            raise PartitaError(
                f"the analytics at {url} "
                + ("refused the token" if token else "require a token")
                + f": set {TOKEN_VARIABLE} (or --token) to the token `partita analytics` runs with"
            ) from None
        raise PartitaError(f"{address} answered {error.code}: {error.read()[:200]!r}") from None
    except (urllib.error.URLError, OSError) as error:
        reason = getattr(error, "reason", error)
        raise PartitaError(
            f"cannot reach the analytics at {url} ({reason}); is `partita analytics` running?"
        ) from None


def timestamp_text(ms: int | None) -> str:
    return "-" if not ms else datetime.fromtimestamp(ms / 1000).strftime("%Y-%m-%d %H:%M:%S")


def _duration(ms: int | float | None) -> str:
    if ms is None:
        return "-"
    if ms >= 60_000:
        return f"{ms / 60_000:.1f} min"
    if ms >= 1000:
        return f"{ms / 1000:.2f} s"
    return f"{ms:.0f} ms"


def render_table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A plain text table: columns padded to their widest cell, the last one unpadded."""
    cells = [[str(h) for h in headers], *[[str(c) for c in row] for row in rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    return "\n".join(
        "  ".join(
            cell if i == len(row) - 1 else cell.ljust(widths[i]) for i, cell in enumerate(row)
        ).rstrip()
        for row in cells
    )


def cmd_instances(args: argparse.Namespace) -> int:
    found = fetch(
        args.url,
        "/api/instances",
        {"state": args.state, "process": args.process, "limit": args.limit},
        token=getattr(args, "token", None),
    )
    if args.json:
        print(json.dumps(found, indent=2))
        return 0
    if not found:
        print("No instances match." if args.state or args.process else "No instances yet.")
        return 0
    rows = [
        (
            i["processInstanceKey"],
            i["bpmnProcessId"],
            i["version"],
            i["state"],
            timestamp_text(i["started"]),
            timestamp_text(i["ended"]) if i["ended"] else "-",
            _duration(i["durationMs"]),
            i["incidents"] or "",
        )
        for i in found
    ]
    print(
        render_table(
            ("KEY", "PROCESS", "VERSION", "STATE", "STARTED", "ENDED", "DURATION", "INCIDENTS"),
            rows,
        )
    )
    active = sum(1 for i in found if i["state"] == "active")
    print(f"\n{len(found)} instances shown ({active} active, {len(found) - active} ended)")
    return 0


def cmd_incidents_list(args: argparse.Namespace) -> int:
    found = fetch(
        args.url,
        "/api/incidents",
        {"process": getattr(args, "process", None)},
        token=getattr(args, "token", None),
    )
    if getattr(args, "json", False):
        print(json.dumps(found, indent=2))
        return 0
    if not found:
        print("No open incidents.")
        return 0
    rows = [
        (
            i["incidentKey"],
            i["bpmnProcessId"],
            i["processInstanceKey"],
            i["elementId"],
            i["errorType"],
            timestamp_text(i["created"]),
            i["errorMessage"],
        )
        for i in found
    ]
    print(
        render_table(
            ("INCIDENT", "PROCESS", "INSTANCE", "ELEMENT", "ERROR", "SINCE", "MESSAGE"), rows
        )
    )
    plural = "" if len(found) == 1 else "s"
    print(f"\n{len(found)} open incident{plural}; resolve one with `partita incidents resolve KEY`")
    return 0


# -- parser -----------------------------------------------------------------------------------


def add_query_flags(parser: argparse.ArgumentParser, *, in_subcommand: bool = False) -> None:
    """--url, --process, --json; in a subcommand their defaults are suppressed so that flags
    given before the subcommand name (`partita incidents --url X list`) are kept."""

    def default(value: object) -> object:
        return argparse.SUPPRESS if in_subcommand else value

    parser.add_argument(
        "--url",
        default=default(DEFAULT_URL),
        help=f"where `partita analytics` serves (default: {DEFAULT_URL})",
    )
    parser.add_argument(
        "--process", default=default(None), metavar="ID", help="only this bpmnProcessId"
    )
    parser.add_argument(
        "--json", action="store_true", default=default(False), help="print the raw JSON"
    )
    parser.add_argument(
        "--token",
        default=default(None),
        help=f"the analytics' access token, if they require one ({TOKEN_VARIABLE})",
    )


def register_incidents_list(incidents: argparse.ArgumentParser, actions: Subcommands) -> None:
    """Make `partita incidents` (no action) and `partita incidents list` list open incidents."""
    add_query_flags(incidents)
    incidents.set_defaults(func=cmd_incidents_list)
    listing = add_command(
        actions,
        "list",
        cmd_incidents_list,
        "list open incidents (from `partita analytics`)",
        description="List the open incidents the running analytics know.",
        examples=INCIDENTS_EPILOG,
        cluster=False,
    )
    add_query_flags(listing, in_subcommand=True)


def register(commands: Subcommands) -> None:
    """Add `partita analytics` and `partita instances`."""
    analytics = add_command(
        commands,
        "analytics",
        cmd_analytics,
        "run the analytics: fold the log's events into tables, serve JSON and a live page",
        examples=ANALYTICS_EPILOG,
    )
    analytics.add_argument(
        "--port",
        dest="web_port",  # not `port`: that is the local broker's port in the shared Config
        type=int,
        default=DEFAULT_PORT,
        help=f"HTTP port (default: {DEFAULT_PORT})",
    )
    analytics.add_argument(
        "--bind",
        metavar="HOST",
        help=f"HTTP address to listen on ({HOST_VARIABLE}, default: {DEFAULT_HOST})",
    )
    analytics.add_argument(
        "--token",
        help=f"require this access token on every request ({TOKEN_VARIABLE}, which keeps it"
        " out of the process list; default: none)",
    )
    analytics.add_argument(
        "--data-dir",
        type=Path,
        metavar="DIR",
        help="folder of the tables (default: <PARTITA_HOME>/analytics)",
    )
    analytics.add_argument(
        "--home", type=Path, help="PARTITA_HOME (default: .partita in a checkout)"
    )
    analytics.add_argument(
        "--log-level", default="warning", choices=["debug", "info", "warning", "error"]
    )

    instances = add_command(
        commands,
        "instances",
        cmd_instances,
        "list process instances with their state (from `partita analytics`)",
        description="List active and recently ended process instances, newest first, as the"
        " running analytics know them.",
        examples=INSTANCES_EPILOG,
        cluster=False,
    )
    add_query_flags(instances)
    instances.add_argument("--state", choices=STATES, help="only instances in this state")
    instances.add_argument("--limit", type=int, default=20, help="at most this many (default: 20)")
