"""Benchmark the model path on the corpus shape peers were measured with (issue 12).

Five hand-written documents about one project (Heron, a data platform), then 50 generated
notes that each mention the project and 2 of 18 topics, through the project's scripted server
(``ingest/scripted_server.py``) replying as a careful model would: pages for the project and
each topic, a line on every concept page a source touches (what it says of that topic, in its
words, as real models write: so busy concept pages grow), a claim per note that changes a topic's
value.

Prints, per ingest: prompt characters (everything sent) at docs 1–5 and 51–55, model calls,
and for docs 51–55 the one-shot CLI's wall time excluding the model (``wikiwright ingest`` in
a new process; the model's latency from the cost ledger is subtracted) without a daemon and
with a running daemon the CLI hands its work to (the control socket).

    .venv/bin/python bench/bench_peers_shape.py [--no-cli]

Targets: prompt chars at 51–55 ≤ 8,000 (mean) and ≤ 1.5x the mean at 1–5; one-shot wall time
excluding the model with a daemon running ≤ 1 s.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from wikiwright.core.config import load_config
from wikiwright.door.init import init_vault
from wikiwright.ingest.scripted_server import ScriptedServer, prompt_text, user_prompt
from wikiwright.runtime.context import VaultContext
from wikiwright.wiki.pages import slugify

PROJECT = "Heron"
TOPICS = ["Kafka", "Postgres", "Redis", "Terraform", "Grafana", "Kubernetes", "Airflow", "Snowflake", "Trino",
          "Spark", "Flink", "Envoy", "Vault", "OpenTelemetry", "Protobuf", "Debezium", "ClickHouse", "Prometheus"]
ATTRIBUTES = ["retention", "replicas", "timeout", "batch size", "pool size", "version"]

HAND_WRITTEN = [
    ("heron-design.md", """\
# Heron design

Date: 2026-03-02. Owner: Priya Nair.

Heron is the data platform that moves product events from the services into the warehouse.
Events are published to Kafka, landed in Postgres staging tables, transformed by Airflow jobs and
loaded into Snowflake, where analysts query them through Trino.

## Goals

Heron must deliver every event exactly once to the warehouse within 15 minutes. Late events are
accepted for 7 days. Schemas are Protobuf messages registered before a producer may publish.

## Architecture

Producers write to Kafka topics partitioned by tenant. A consumer group per domain reads the
topics and writes micro-batches into Postgres staging. Airflow schedules the transforms every five
minutes; a failed transform is retried three times before it pages the on-call engineer.

The Heron Kafka retention is 7 days. The Heron Postgres pool size is 40 connections.
"""),
    ("heron-roadmap.md", """\
# Heron roadmap 2026

Updated 2026-03-10.

Q2: replace the nightly Snowflake full loads with incremental merges; add OpenTelemetry tracing to
every consumer; move the staging database to the new Postgres cluster.

Q3: stream change data from the billing database with Debezium; evaluate ClickHouse for the
real-time dashboards; retire the legacy cron jobs that Airflow replaced.

Q4: self-service schemas: product teams register Protobuf messages without a platform review.
The Heron Airflow version is 2.8.
"""),
    ("heron-team.md", """\
# Heron team

As of 2026-03-12 the Heron team is Priya Nair (lead), Tomás Ortega (ingestion), Mei Lin (warehouse)
and Jonas Berg (reliability). The team is on call in weekly rotations; the runbook lives next to the
Grafana dashboards. Questions go to the #heron channel.

Tomás owns the Kafka consumers and the Postgres staging cluster. Mei owns Snowflake and Trino.
Jonas owns Grafana, Prometheus and the alerting rules.
"""),
    ("heron-api.md", """\
# Heron ingestion API

Date: 2026-03-15.

Services publish events through the Heron ingestion API, a gRPC service behind Envoy. A request
carries a batch of up to 500 Protobuf events; larger batches are refused with RESOURCE_EXHAUSTED.
Each event needs a tenant id, an event type registered in the schema registry, and a timestamp.

The API acknowledges a batch once Kafka has it on three replicas. Clients retry with exponential
backoff on UNAVAILABLE. The Heron Envoy timeout is 2 seconds.
"""),
    ("heron-runbook.md", """\
# Heron runbook

Updated 2026-03-20.

When the warehouse lags by more than 15 minutes, check the Grafana board "Heron freshness" first:
consumer lag in Kafka, staging row counts in Postgres, and the Airflow DAG runs. A stuck consumer
is restarted through Kubernetes; a failed transform is re-run from the Airflow UI.

If Snowflake loads fail, pause the DAG, fix the failing model, and backfill. The Heron Kubernetes
replicas count is 6.
"""),
]


def slug(name: str) -> str:
    return slugify(name)


def mentioning(text: str, topic: str, skip: str = "") -> str:
    """The source's first sentence naming ``topic`` (not ``skip``), as a model's line would say it."""
    body = " ".join(line for line in text.splitlines() if line and not line.startswith("#"))
    for sentence in body.replace("; ", ". ").split(". "):
        if topic in sentence and sentence.strip().rstrip(".") != skip.rstrip("."):
            return sentence.strip().rstrip(".") + "."
    return f"{topic} came up."


def note_text(index: int, rng: random.Random) -> tuple[str, str, str, str, str]:
    """(text, topic a, topic b, attribute, the sentence stating the new value)."""
    a, b = rng.sample(TOPICS, 2)
    attribute = rng.choice(ATTRIBUTES)
    value = f"{rng.randint(2, 90)}"
    day = 1 + index % 28
    statement = f"The Heron {a} {attribute} is now {value}."
    filler = " ".join(rng.choice([
        f"We looked at how {a} and {b} behave under the evening peak.",
        f"{b} alerts fired twice; both were noise from the staging cluster.",
        f"Someone asked whether {a} could take over part of what {b} does.",
        "The backlog review moved two tickets to next sprint.",
        f"Load on {PROJECT} stayed within its budget all week.",
    ]) for _ in range(3))
    text = (f"# {PROJECT} note {index}\n\nDate: 2026-05-{day:02d}.\n\nToday on {PROJECT} we worked on {a} and {b}. "
            f"{filler}\n\n{statement}\n")
    return text, a, b, attribute, statement


class Model:
    """The scripted model: replies as a careful model would, from what the wiki holds so far."""

    def __init__(self) -> None:
        self.pages: set[str] = set()
        self.replies: dict[str, dict[str, Any]] = {}

    def plan_hand_written(self, name: str, text: str) -> None:
        stem = name.removesuffix(".md")
        ops: list[dict[str, Any]] = []
        if "heron" not in self.pages:
            ops.append({"op": "create_page", "page": "heron", "type": "entity", "title": PROJECT,
                        "summary": "The data platform that moves product events into the warehouse.",
                        "body": f"# {PROJECT}\n\nThe data platform that moves product events into the warehouse "
                                f"([[src-{stem}]]).\n\n## Notes\n", "aliases": ["Heron platform"]})
            self.pages.add("heron")
        else:
            ops.append({"op": "add_to_section", "page": "heron", "heading": "Documents",
                        "text": f"- [[src-{stem}]]: {text.splitlines()[0].lstrip('# ')}"})
        for topic in TOPICS:
            if topic in text and slug(topic) not in self.pages:
                ops.append({"op": "create_page", "page": slug(topic), "type": "concept", "title": topic,
                            "summary": f"{topic} as {PROJECT} uses it.",
                            "body": f"# {topic}\n\n{topic} as [[heron]] uses it ([[src-{stem}]]).\n"})
                self.pages.add(slug(topic))
            elif topic in text:  # as real models do: a line on every concept page the source touches
                ops.append({"op": "add_to_section", "page": slug(topic), "heading": "Notes",
                            "text": f"- [[src-{stem}]]: {mentioning(text, topic)}"})
        for line in text.splitlines():
            if line.startswith(f"The {PROJECT} ") and " is " in line:
                for sentence in line.split(". "):
                    subject, _, value = sentence.removeprefix(f"The {PROJECT} ").partition(" is ")
                    words = subject.split()
                    topic = next((t for t in TOPICS if t == words[0]), None)
                    if topic is None:
                        continue
                    quote = sentence if sentence.endswith(".") else sentence + "."
                    ops.append({"op": "add_claim", "page": slug(topic),
                                "key": f"heron.{slug(topic)}.{slug(' '.join(words[1:]))}",
                                "value": value.rstrip("."), "as_of": "2026-03-20", "quote": quote,
                                "replaces": False})
        self.replies[name] = {"title": text.splitlines()[0].lstrip("# "), "summary": f"About {PROJECT}.",
                              "key_points": [], "operations": ops}

    def plan_note(self, name: str, text: str, a: str, b: str, attribute: str, statement: str) -> None:
        stem = name.removesuffix(".md")
        ops: list[dict[str, Any]] = []
        for topic in (a, b):
            if slug(topic) not in self.pages:
                ops.append({"op": "create_page", "page": slug(topic), "type": "concept", "title": topic,
                            "summary": f"{topic} as {PROJECT} uses it.",
                            "body": f"# {topic}\n\n{topic} as [[heron]] uses it.\n"})
                self.pages.add(slug(topic))
            # The line a real model writes: what the note says about this topic, in its words.
            ops.append({"op": "add_to_section", "page": slug(topic), "heading": "Notes",
                        "text": f"- [[src-{stem}]]: {mentioning(text, topic, skip=statement)}"})
        ops.append({"op": "add_to_section", "page": "heron", "heading": "Notes",
                    "text": f"- [[src-{stem}]]: {a} and {b}."})
        value = statement.rsplit(" ", 1)[-1].rstrip(".")
        ops.append({"op": "add_claim", "page": slug(a), "key": f"heron.{slug(a)}.{slug(attribute)}",
                    "value": value, "as_of": "2026-05-01", "quote": statement, "replaces": True})
        self.replies[name] = {"title": f"{PROJECT} note", "summary": f"Work on {a} and {b}.", "key_points": [],
                              "operations": ops}

    def __call__(self, request: dict[str, Any]) -> dict[str, Any]:
        prompt = user_prompt(request)
        for name, reply in self.replies.items():
            if f"`raw/{name}`" in prompt:
                return reply
        return {"title": "unknown", "summary": "", "operations": []}


def corpus() -> tuple[list[tuple[str, str]], Model]:
    rng = random.Random(12)
    model = Model()
    docs = []
    for name, text in HAND_WRITTEN:
        model.plan_hand_written(name, text)
        docs.append((name, text))
    for index in range(1, 51):
        name = f"heron-note-{index:02d}.md"
        text, a, b, attribute, statement = note_text(index, rng)
        model.plan_note(name, text, a, b, attribute, statement)
        docs.append((name, text))
    return docs, model


def model_seconds(vault: Path) -> float:
    path = vault / ".wikiwright" / "llm.db"
    if not path.exists():
        return 0.0
    with sqlite3.connect(path) as db:
        return float(db.execute("SELECT coalesce(sum(latency_s),0) FROM llm_calls").fetchone()[0])


def in_process(root: Path, docs: list[tuple[str, str]], server: ScriptedServer,
               snapshot_after: int) -> tuple[list[int], list[int]]:
    """Ingest every document through the pipeline; (prompt chars, calls) per ingest. The vault
    after ``snapshot_after`` documents is copied to ``root/snapshot`` for the CLI runs."""
    vault, _ = init_vault(root / "vault", "wikiwright", "wikiwright@localhost")
    config = server.config(load_config(vault.root))
    chars: list[int] = []
    calls: list[int] = []

    def run(batch: list[tuple[str, str]]) -> None:
        # One process's life: its vault context on the model's config and its ingest wiring.
        with VaultContext(config, vault) as ctx:
            services = ctx.ingest_services()
            pipeline, registrar = services.pipeline, services.registrar
            for name, text in batch:
                path = vault.raw / name
                path.write_text(text, encoding="utf-8")
                registrar.register(path)
                before = len(server.requests)
                result = pipeline.drain_once()
                assert result is not None and result.state == "ingested", result
                new = server.requests[before:]
                calls.append(len(new))
                chars.append(sum(len(prompt_text(r)) for r in new))

    run(docs[:snapshot_after])
    shutil.copytree(vault.root, root / "snapshot", symlinks=True)
    run(docs[snapshot_after:])
    return chars, calls


def one_shot(vault: Path, docs: list[tuple[str, str]], env: dict[str, str], inbox: Path) -> list[float]:
    """Wall time excluding the model of ``wikiwright ingest FILE`` per document."""
    ours = []
    for name, text in docs:
        source = inbox / name
        source.write_text(text, encoding="utf-8")
        before = model_seconds(vault)
        started = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "wikiwright", "ingest", "--vault", str(vault), str(source)],
                              env=env, capture_output=True, text=True, timeout=600)
        wall = time.perf_counter() - started
        if done.returncode != 0 or "ingested" not in done.stdout:
            raise SystemExit(f"ingest {name} failed: {done.stdout}\n{done.stderr}")
        ours.append(wall - (model_seconds(vault) - before))
    return ours


def cli_floor(env: dict[str, str], runs: int = 3) -> list[float]:
    """Wall time of ``wikiwright --version``: what any one-shot command pays on this machine now."""
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-m", "wikiwright", "--version"], env=env, capture_output=True, check=True)
        times.append(time.perf_counter() - started)
    return times


def with_daemon(vault: Path, docs: list[tuple[str, str]], env: dict[str, str], inbox: Path) -> tuple[list[float], str]:
    log = open(vault.parent / "daemon.log", "w")  # noqa: SIM115 - held for the daemon's life
    proc = subprocess.Popen([sys.executable, "-m", "wikiwright", "run", "--vault", str(vault)], env=env,
                            stdout=log, stderr=subprocess.STDOUT)
    try:
        sock = vault / ".wikiwright" / "control.sock"
        deadline = time.monotonic() + 120
        while not sock.exists():
            if proc.poll() is not None or time.monotonic() > deadline:
                return [], "the daemon did not open its control socket (see daemon.log)"
            time.sleep(0.1)
        one_shot(vault, [("warm-up.md", "# Warm-up\n\nA note that loads the daemon's model client.\n")], env, inbox)
        return one_shot(vault, docs, env, inbox), ""
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--no-cli", action="store_true", help="skip the one-shot CLI timings")
    parser.add_argument("--show", type=int, metavar="N", help="print the prompt of document N (1-55)")
    args = parser.parse_args()
    docs, model = corpus()
    with tempfile.TemporaryDirectory() as tmp, ScriptedServer(model) as server:
        root = Path(tmp)
        started = time.perf_counter()
        chars, calls = in_process(root, docs, server, snapshot_after=50)
        print(f"55 ingests in-process in {time.perf_counter() - started:.1f}s")
        if args.show:
            print(user_prompt(server.requests[args.show - 1]))
        first, last = chars[:5], chars[50:55]
        print(f"{'docs':>8} {'prompt chars per ingest':>55} {'mean':>7} {'calls':>6}")
        print(f"{'1-5':>8} {' '.join(f'{c:>9}' for c in first):>55} {statistics.mean(first):>7.0f} "
              f"{statistics.mean(calls[:5]):>6.1f}")
        print(f"{'51-55':>8} {' '.join(f'{c:>9}' for c in last):>55} {statistics.mean(last):>7.0f} "
              f"{statistics.mean(calls[50:55]):>6.1f}")
        growth = statistics.mean(last) / statistics.mean(first)
        print(f"growth 1-5 -> 51-55: {growth:.2f}x; max calls per ingest: {max(calls)}")
        print(f"max at 51-55: {max(last)}")
        ok = statistics.mean(last) <= 8000 and growth <= 1.5
        if not args.no_cli:
            env = {**os.environ, **server.env()}
            inbox = root / "inbox"
            inbox.mkdir()
            plain = root / "cli-no-daemon"
            shutil.copytree(root / "snapshot", plain, symlinks=True)
            alone = one_shot(plain, docs[50:], env, inbox)
            served = root / "cli-daemon"
            shutil.copytree(root / "snapshot", served, symlinks=True)
            handed, problem = with_daemon(served, docs[50:], env, inbox)
            floor = cli_floor(env)
            print("\none-shot `wikiwright ingest`, docs 51-55, wall time excluding the model (s):")
            print(f"  {'baseline: --version':<22} {' '.join(f'{s:6.2f}' for s in floor)}   "
                  f"mean {statistics.mean(floor):.2f}  (a process that starts and exits, same run)")
            print(f"  {'without a daemon':<22} {' '.join(f'{s:6.2f}' for s in alone)}   "
                  f"mean {statistics.mean(alone):.2f}")
            if handed:
                print(f"  {'with a running daemon':<22} {' '.join(f'{s:6.2f}' for s in handed)}   "
                      f"mean {statistics.mean(handed):.2f}")
                ok = ok and statistics.mean(handed) <= 1.0
            else:
                print(f"  with a running daemon: not measured: {problem}")
                ok = False
        print(f"\ntargets: prompt chars at 51-55 <= 8,000 and <= 1.5x docs 1-5; daemon one-shot <= 1 s: "
              f"{'met' if ok else 'NOT met'}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
