"""The faust app: the log's EVENTs folded into RocksDB-backed tables, served as JSON and HTML.

- Consumer group `<ns>.analytics` (the faust app id), reading `<ns>.log` from the earliest
  offset. List the group in `PARTITA_DOWNSTREAM_GROUPS` so the engine never truncates the log
  past what the analytics have committed.
- **Isolation level.** The engine writes events in Kafka transactions, so the analytics must
  read `read_committed`: otherwise events of an aborted batch would be counted. faust 0.15's
  aiokafka driver picks the isolation level from `processing_guarantee` alone
  (`read_committed` only with `exactly_once`), so the app runs with
  `processing_guarantee="exactly_once"` (rather than a patched consumer: it is the setting
  faust documents for read_committed). It also commits each table's changelog writes and the
  consumer offsets in one transaction per source partition, so the changelog always matches
  the committed offsets; `run` rebuilds the local RocksDB copies from it at every start, and
  the appliers ignore redelivered positions.
- Tables use faust's `rocksdb://` store, which uses rocksdict when python-rocksdb is absent,
  one RocksDB per table and partition under `<data_dir>/<group>/tables`.
- Records arrive as raw bytes; the `recordType`, `valueType` and `intent` headers select the
  EVENTs the appliers use before anything is decoded. A selected record that does not decode
  or whose folding fails is logged (topic, partition, offset, value type, intent, what failed),
  counted (`/api/skipped`) and skipped.

- Kafka access: the analytics role's (`PARTITA_KAFKA_CONFIG`, then
  `PARTITA_KAFKA_CONFIG_ANALYTICS`), translated to faust's credentials by
  `partita.analytics.credentials` (SASL PLAIN and SCRAM, TLS and mTLS); `run` first waits for
  the cluster to answer with those settings, so a refused credential fails within seconds.
  The role reads `<ns>.log`, and under the group's prefix `<ns>.analytics` creates and writes
  the tables' changelog topics (`<ns>.analytics-<table>-changelog`) and uses transactional ids
  (`<ns>.analytics-<n>-<partition>`).

Figures are merged over the partitions this worker is assigned: run one analytics worker per
namespace (a second one would split the partitions and each would serve only its share).

The web page and its JSON (`/`, `/api/*`):

- Listens on 127.0.0.1 unless told otherwise (`--bind` or `PARTITA_ANALYTICS_HOST`, e.g.
  `0.0.0.0` in a container), port 6066 (`--port`).
- With a token (`PARTITA_ANALYTICS_TOKEN` or `--token`, at least 16 characters), every request
  must carry it: `Authorization: Bearer <token>`, or in a browser `http://host:6066/?token=<token>`
  (the page passes it on as the header). Anything else gets 401; see `web_token`.
"""

from __future__ import annotations

import logging
import os
import shutil
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from partita.analytics import views
from partita.analytics.appliers import Tables, fold, wanted
from partita.analytics.credentials import faust_broker_settings
from partita.analytics.dashboard import PAGE
from partita.analytics.skipped import SkippedRecords
from partita.analytics.web_token import token_middleware
from partita.errors import PartitaError
from partita.log.admin import admin_client, wait_for_metadata
from partita.log.clients import explain, is_security_error
from partita.log.security import KafkaAccess
from partita.protocol.codec import RecordCodec
from partita.protocol.headers import INTENT, RECORD_TYPE, VALUE_TYPE

log = logging.getLogger(__name__)


class AnalyticsError(PartitaError):
    """The analytics cannot start; the message says what to do."""


@dataclass(frozen=True, slots=True)
class AnalyticsSettings:
    """Where the analytics read from, keep their tables and serve their figures."""

    access: KafkaAccess
    """The analytics role's Kafka access (`kafka_access(config, KafkaRole.ANALYTICS)`)."""
    namespace: str
    partitions: int
    data_dir: Path
    port: int = 6066
    bind: str = "127.0.0.1"
    replication_factor: int = -1
    token: str | None = field(default=None, repr=False)
    """With a token, every web request must carry it (see the module docs)."""

    @property
    def group(self) -> str:
        """The consumer group (and faust app id): `<ns>.analytics`."""
        return group_id(self.namespace)

    @property
    def log_topic(self) -> str:
        return f"{self.namespace}.log"

    @property
    def url(self) -> str:
        host = "127.0.0.1" if self.bind in ("0.0.0.0", "::", "") else self.bind
        return f"http://{host}:{self.port}/"


def group_id(namespace: str) -> str:
    """The analytics consumer group of a namespace (list it in PARTITA_DOWNSTREAM_GROUPS)."""
    return f"{namespace}.analytics"


def now_ms() -> int:
    return int(time.time() * 1000)


def build_app(settings: AnalyticsSettings, broker: dict[str, Any] | None = None) -> Any:
    """A faust App with the fold agent, the tables and the web pages (not started). `broker`:
    `faust_broker_settings(settings.access)`, computed here when not given."""
    import faust

    datadir = settings.data_dir / settings.group
    (datadir / "tables").mkdir(parents=True, exist_ok=True)
    middlewares = [token_middleware(settings.token)] if settings.token else []
    app = faust.App(
        settings.group,
        **(broker if broker is not None else faust_broker_settings(settings.access)),
        store="rocksdb://",
        datadir=str(datadir),
        tabledir=str(datadir / "tables"),
        processing_guarantee="exactly_once",  # read_committed: see the module docs
        consumer_auto_offset_reset="earliest",
        topic_partitions=settings.partitions,
        topic_replication_factor=max(1, settings.replication_factor),
        web_port=settings.port,
        web_bind=settings.bind,
        web_host="127.0.0.1" if settings.bind in ("0.0.0.0", "::") else settings.bind,
        web_router_enabled=False,  # single worker; /api/* serves the merged figures
        web_tables_enabled=False,
        web_stats_enabled=False,
        web_graph_enabled=False,
        web_application_options={"middlewares": middlewares},
        key_serializer="raw",
        value_serializer="raw",
    )
    app.web = _web_without_index(app)
    schema: Any = faust.Schema(key_type=str, key_serializer="json", value_serializer="json")
    tables = Tables(
        **{
            name: app.Table(
                name,
                partitions=settings.partitions,
                schema=schema,
                help=f"analytics table {name} (see partita.analytics.appliers)",
            )
            for name in Tables.names()
        }
    )
    topic = app.topic(
        settings.log_topic, key_serializer="raw", value_serializer="raw", internal=False
    )
    codec = RecordCodec()
    skipped = SkippedRecords("analytics")

    @app.agent(topic, name="fold")
    async def fold_events(stream: Any) -> None:
        async for event in stream.events():
            headers = event.headers or {}
            if not wanted(headers.get(RECORD_TYPE), headers.get(VALUE_TYPE), headers.get(INTENT)):
                continue
            message = event.message
            fold(
                tables,
                codec,
                skipped,
                message.topic,
                message.partition,
                message.offset,
                event.value,
                headers,
            )

    _add_pages(app, tables, skipped)
    return app


def _web_without_index(app: Any) -> Any:
    """faust's aiohttp web server without its `{"status": "OK"}` index, so `/` is ours."""
    from faust.web.drivers.aiohttp import Web

    class DashboardWeb(Web):
        production_blueprints = ()

    return DashboardWeb(app)


def _add_pages(app: Any, tables: Tables, skipped: SkippedRecords) -> None:
    def query(request: Any, name: str) -> str | None:
        value = request.query.get(name)
        return str(value) if value else None

    def json_page(path: str, figures: Callable[[Any], Any]) -> None:
        async def handler(view: Any, request: Any) -> Any:
            try:
                return view.json(figures(request))
            except ValueError as error:
                return view.json({"error": str(error)}, status=400)

        handler.__name__ = "api_" + path.strip("/").replace("/", "_")
        app.page(path)(handler)

    json_page("/api/summary", lambda r: views.summary(tables, now_ms()))
    json_page("/api/skipped", lambda r: skipped.to_json())
    json_page("/api/processes", lambda r: views.processes(tables))
    json_page("/api/elements", lambda r: views.elements(tables, query(r, "process")))
    json_page("/api/jobs", lambda r: views.jobs(tables, now_ms()))
    json_page("/api/incidents", lambda r: views.incidents(tables, query(r, "process")))
    json_page("/api/timeline", lambda r: views.timeline(tables, now_ms()))
    json_page(
        "/api/user-tasks",
        lambda r: views.user_tasks(
            tables,
            assignee="" if query(r, "unassigned") else query(r, "assignee"),
            candidate_group=query(r, "candidateGroup"),
            candidate_user=query(r, "candidateUser"),
            process=query(r, "process"),
            due_before=query(r, "dueBefore"),
            limit=int(query(r, "limit") or 100),
        ),
    )
    json_page(
        "/api/instances",
        lambda r: views.instances(
            tables,
            now_ms(),
            state=query(r, "state"),
            process=query(r, "process"),
            limit=int(query(r, "limit") or 100),
        ),
    )

    async def dashboard(view: Any, request: Any) -> Any:
        return view.html(PAGE)

    app.page("/")(dashboard)


def run(
    settings: AnalyticsSettings, loglevel: str = "warning", connect_timeout: float = 30.0
) -> int:
    """Run the analytics worker until SIGINT/SIGTERM; returns the exit code.

    Settings the analytics cannot apply (ConfigError) and a cluster that refuses or does not
    answer them (KafkaUnavailableError, within `connect_timeout`) stop it before faust starts.
    The local RocksDB copies of the tables are deleted first and rebuilt from the changelog
    topics: faust writes them before its Kafka transaction commits, so a copy left by a stopped
    or crashed worker may hold updates whose transaction was aborted. The changelog, read
    `read_committed`, always matches the committed consumer offsets.
    """
    import faust

    broker = faust_broker_settings(settings.access)
    wait_for_metadata(settings.access, connect_timeout)
    shutil.rmtree(settings.data_dir / settings.group / "tables", ignore_errors=True)
    settings = replace(settings, partitions=log_partitions(settings))
    app = build_app(settings, broker)
    create_changelogs(settings, [table.changelog_topic_name for table in app.tables.values()])
    worker = faust.Worker(app, loglevel=loglevel, quiet=True, redirect_stdouts=False)
    worker.spinner = None  # no terminal control codes in the output
    code = 0
    try:
        worker.execute_from_commandline()
    except SystemExit as stop:
        code = int(stop.code or 0)
    _exit_if_threads_hang(code)
    return code


def log_partitions(settings: AnalyticsSettings, timeout: float = 30.0) -> int:
    """The partition count of the log topic, waiting for it to exist; AnalyticsError if not,
    at once when the analytics' principal may not see it."""
    admin = admin_client(settings.access)
    deadline = time.monotonic() + timeout
    while True:
        metadata = admin.list_topics(settings.log_topic, timeout=10).topics[settings.log_topic]
        if metadata.error is None and metadata.partitions:
            return len(metadata.partitions)
        if metadata.error is not None and is_security_error(metadata.error):
            raise AnalyticsError(explain(metadata.error, settings.access))
        if time.monotonic() > deadline:
            raise AnalyticsError(
                f"topic {settings.log_topic} does not exist at {settings.access.bootstrap}"
                f" ({metadata.error}); create it with `partita topics apply`"
            )
        time.sleep(0.5)


def create_changelogs(settings: AnalyticsSettings, names: list[str], timeout: float = 30.0) -> None:
    """Create the tables' compacted changelog topics (as faust would) and wait for their leaders.

    faust checks a changelog's partition count against the log's on the first write of each
    table, from its consumer's metadata; a topic faust creates itself at start can still show
    0 partitions there, and the check then crashes the agent. Topics that exist are kept.
    """
    from confluent_kafka import KafkaError, KafkaException
    from confluent_kafka.admin import NewTopic

    admin = admin_client(settings.access)
    topics = [
        NewTopic(
            name,
            num_partitions=settings.partitions,
            replication_factor=settings.replication_factor,
            config={"cleanup.policy": "compact"},
        )
        for name in names
    ]
    for name, future in admin.create_topics(topics).items():
        try:
            future.result(timeout)
        except KafkaException as error:
            kafka_error = error.args[0]
            if kafka_error.code() == KafkaError.TOPIC_ALREADY_EXISTS:
                continue
            if is_security_error(kafka_error):
                raise AnalyticsError(
                    f"cannot create changelog topic {name}: {explain(kafka_error, settings.access)}"
                ) from None
            raise AnalyticsError(f"cannot create changelog topic {name}: {error}") from None
    deadline = time.monotonic() + timeout
    for name in names:
        while True:
            topic = admin.list_topics(name, timeout=10).topics[name]
            leaders = [p.leader for p in topic.partitions.values()]
            if topic.error is None and len(leaders) == settings.partitions and -1 not in leaders:
                break
            if len(leaders) not in (0, settings.partitions):
                raise AnalyticsError(
                    f"changelog topic {name} has {len(leaders)} partitions, the log"
                    f" {settings.partitions}; delete it (and the group) to start over"
                )
            if time.monotonic() > deadline:
                raise AnalyticsError(f"changelog topic {name} has no leaders after {timeout} s")
            time.sleep(0.2)


def _exit_if_threads_hang(code: int, grace: float = 2.0) -> None:
    """Exit the process with `code` when faust left a non-daemon thread running.

    faust 0.15.3 can fail its last transactional commit on stop (aiokafka `IllegalOperation:
    Not in the middle of a transaction`) and then never stops its consumer thread, which would
    keep the process alive after the event loop closed. Nothing is lost by exiting: the open
    transaction is aborted by the broker and its events are folded again after a restart.
    """
    deadline = time.monotonic() + grace
    for thread in threading.enumerate():
        if thread is threading.current_thread() or thread.daemon:
            continue
        thread.join(max(0.0, deadline - time.monotonic()))
    if any(
        t.is_alive() and not t.daemon
        for t in threading.enumerate()
        if t is not threading.current_thread()
    ):
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
