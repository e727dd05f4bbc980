"""A corpus of varied documents for the revert tests: projects, tools and terms that recur
across sources the way real documentation does (READMEs, changelogs, how-tos, notes), in
markdown, plain text and HTML, deterministic for a given count."""

from __future__ import annotations

import random

PROJECTS = ["Kestrel", "Valgrind", "Postgres", "Nginx", "Redis", "Kafka", "Flask", "Django", "Celery", "Ansible",
            "Terraform", "Grafana", "Prometheus", "Jenkins", "Docker", "Kubernetes", "Sphinx", "Pytest", "Numpy",
            "Pandas"]
TERMS = ["connection pool", "write-ahead log", "rate limiter", "message broker", "reverse proxy", "worker queue",
         "query planner", "cache eviction", "leader election", "health check", "service mesh", "config drift",
         "rolling upgrade", "load balancer", "schema migration", "retry budget"]
VERBS = ["handles", "stores", "routes", "schedules", "monitors", "replicates", "validates", "compresses"]
THINGS = ["requests", "metrics", "messages", "snapshots", "tasks", "sessions", "events", "backups"]
KINDS = ["README", "Changelog", "Quickstart", "Tuning guide", "Incident notes", "Design notes"]


def _sentence(rng: random.Random, name: str, term: str) -> str:
    return (f"{name} {rng.choice(VERBS)} {rng.choice(THINGS)} through its {term} and "
            f"{rng.choice(VERBS)} {rng.choice(THINGS)} on every node.")


def document(n: int) -> tuple[str, str]:
    """(path under raw/, text) of document ``n``."""
    rng = random.Random(n * 7919)
    names = rng.sample(PROJECTS, 3)
    terms = rng.sample(TERMS, 2)
    kind = KINDS[n % len(KINDS)]
    title = f"{names[0]} {kind} {n}"
    lines = [f"{names[0]} is a tool that {rng.choice(VERBS)} {rng.choice(THINGS)} for small teams.",
             _sentence(rng, names[1], terms[0]),
             f"The {terms[1]} in {names[2]} {rng.choice(VERBS)} {rng.choice(THINGS)} when load grows.",
             f"Operators compare {names[0]} with {names[1]} before each release of {names[2]}."]
    extra = [f"Version {n // 10}.{n % 10} of {names[0]} changed how the {terms[0]} {rng.choice(VERBS)} "
             f"{rng.choice(THINGS)}.",
             f"Unique marker number {n} names the {rng.choice(THINGS)} this document keeps."]
    folder = names[0].lower()
    fmt = n % 3
    if fmt == 0:
        text = f"# {title}\n\n" + " ".join(lines[:2]) + "\n\n## Details\n\n" + " ".join(lines[2:]) + "\n\n" \
            + "".join(f"- {line}\n" for line in extra)
        return f"{folder}/doc-{n:03d}.md", text
    if fmt == 1:
        text = f"{title}\n\n" + " ".join(lines) + "\n\n" + " ".join(extra) + "\n"
        return f"{folder}/doc-{n:03d}.txt", text
    body = "".join(f"<p>{line}</p>\n" for line in [*lines, *extra])
    text = (f"<!DOCTYPE html>\n<html><head><title>{title}</title></head><body><main><h1>{title}</h1>\n"
            f"{body}</main></body></html>\n")
    return f"{folder}/doc-{n:03d}.html", text


def corpus(count: int) -> list[tuple[str, str]]:
    return [document(n) for n in range(count)]
