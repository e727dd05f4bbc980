"""Issue 20 (and 18's redaction bullet): secrets found by a well-kept scanner, on the real pipeline.

More than forty kinds of secret are planted in sources, a file name, front matter, a DOCX's
title metadata and a daily-log section, and ingested through the model path (the scripted
OpenAI-compatible server records every request): no value reaches a prompt, a page, the git
history (``git log -p --all``), a daily log or a log line as the log handlers write it, and
``status`` names the kinds only. Public documentation that only *talks* about secrets
(``password``, ``SECRET_KEY = os.environ.get(...)``, placeholders) is ingested and committed as
it is, its code intact.

Every value is fake and made at run time from a prefix and a seeded random body (so no literal
token is in this file for a push-protection scanner to flag).
"""

from __future__ import annotations

import base64
import io
import json
import logging
import random
import string
from collections.abc import Iterator
from urllib.parse import quote

import pytest
from wikiwright.core.logsetup import make_handler
from wikiwright.core.secrets import scan
from wikiwright.runtime.status import gather
from wikiwright.wiki.pages import parse_page

from tests.conftest import Services
from tests.helpers import cli, git
from tests.llm_server import ScriptedServer, prompt_text
from tests.model_helpers import reply, use_model

RNG = random.Random(2026_12_01)  # seeded: the same fake values on every run
UPPER, LOWER, DIGITS = string.ascii_uppercase, string.ascii_lowercase, string.digits
ALNUM = UPPER + LOWER + DIGITS
HEX = "0123456789abcdef"
B64 = ALNUM + "+/"
URLSAFE = ALNUM + "-_"


def rand(chars: str, n: int) -> str:
    return "".join(RNG.choice(chars) for _ in range(n))


def mixed(n: int) -> str:
    """A random body with upper case, lower case and digits for sure."""
    body = list(rand(UPPER, 2) + rand(LOWER, 2) + rand(DIGITS, 2) + rand(ALNUM, n - 6))
    RNG.shuffle(body)
    return "".join(body)


def password() -> str:
    return rand(LOWER, 5) + rand(DIGITS, 3) + rand(UPPER, 3) + "!" + rand(LOWER, 3)


def b64url(data: dict[str, object]) -> str:
    return base64.urlsafe_b64encode(json.dumps(data).encode()).decode().rstrip("=")


def private_key(kind: str) -> tuple[str, str]:
    body = "\n".join(rand(B64, 64) for _ in range(6))
    return f"-----BEGIN {kind}PRIVATE KEY-----\n{body}\n-----END {kind}PRIVATE KEY-----", body.splitlines()[2]


def planted() -> list[tuple[str, str, str]]:
    """(kind, the line a person would paste, the value that must never leave the machine)."""
    out: list[tuple[str, str, str]] = []

    def add(kind: str, value: str, line: str = "{v}") -> None:
        out.append((kind, line.format(v=value), value))

    add("aws-key", "AK" + "IA" + rand(UPPER + DIGITS, 16), "aws_access_key_id = {v}")
    add("aws-secret", rand(B64, 40), 'aws_secret_access_key = "{v}"')
    add("github-token", "gh" + "p_" + mixed(36), "The CI pushes with {v}.")
    add("github-oauth", "gh" + "o_" + mixed(36), "oauth: {v}")
    add("github-fine-grained", "github" + "_pat_" + mixed(22) + "_" + mixed(59), "GH_TOKEN={v}")
    add("gitlab-token", "gl" + "pat-" + mixed(20), "The mirror uses {v} to pull.")
    add("slack-token", "xo" + "xb-" + rand(DIGITS, 12) + "-" + rand(DIGITS, 13) + "-" + mixed(24), "bot: {v}")
    add("slack-webhook", "https://hooks.slack" + ".com/services/T" + mixed(8) + "/B" + mixed(8) + "/" + mixed(24),
        "Alerts post to {v} on failure.")
    add("openai-legacy", "sk-" + mixed(20) + "T3Blbk" + "FJ" + mixed(20), "The summariser calls {v}.")
    add("openai-project", "sk-" + "proj-" + mixed(48), "OPENAI_API_KEY={v}")
    add("anthropic-key", "sk-" + "ant-api03-" + mixed(93) + "AA", "anthropic: {v}")
    add("stripe-secret", "sk" + "_live_" + mixed(24), "Charges use {v} in production.")
    add("stripe-restricted", "rk" + "_live_" + mixed(24), "Refunds use {v}.")
    header = b64url({"alg": "HS256", "typ": "JWT"})
    add("jwt", f"{header}.{b64url({'sub': rand(DIGITS, 10), 'role': 'admin'})}.{rand(URLSAFE, 43)}",
        "Session cookie: {v}")
    add("azure-storage-key", rand(B64, 86) + "==",
        "DefaultEndpointsProtocol=https;AccountName=billingstore;AccountKey={v};EndpointSuffix=core.windows.net")
    add("azure-sas-token", quote(rand(B64, 43) + "=", safe=""),
        "https://billingstore.blob.core.windows.net/exports/q3.csv?sv=2022-11-02&ss=b&srt=o&sp=r"
        "&se=2027-01-01T00:00:00Z&sig={v}")
    add("npm-npmrc", "np" + "m_" + mixed(36), "//registry.npmjs.org/:_authToken={v}")
    add("npm-token", "np" + "m_" + mixed(36), "Publishing uses the token {v} from the vault.")
    add("basic-auth-url", password(), "git clone https://deploy:{v}@git.example.com/billing.git")
    add("redis-url", password(), "REDIS_URL=redis://:{v}@cache.internal:6379/0")
    add("mysql-url", password(), "DATABASE_URL=mysql://app:{v}@db.internal:3306/app")
    add("postgres-url", password(), "The database is postgresql://billing:{v}@db.internal:5432/billing for now.")
    add("mongodb-url", password(), "mongo: mongodb+srv://reporting:{v}@cluster0.example.net/reports")
    add("amqp-url", password(), "broker amqp://worker:{v}@mq.internal:5672/")
    add("sendgrid-key", "SG." + mixed(22) + "." + mixed(43), "Mail goes through {v}.")
    add("telegram-token", rand(DIGITS, 9) + ":AA" + mixed(33), "The alert bot is {v}.")
    add("vault-token", "hv" + "s." + mixed(95), "VAULT_TOKEN={v}")
    add("vault-legacy", "s." + mixed(24), "export VAULT_TOKEN={v}")
    add("pypi-token", "pypi-" + "AgEIcHlwaS5vcmc" + rand(URLSAFE, 80), "twine upload -p {v} dist/*")
    docker_auth = base64.b64encode(f"deployer:{password()}".encode()).decode()
    add("docker-auth", docker_auth, '{{"auths": {{"registry.example.com": {{"auth": "{v}"}}}}}}')
    add("discord-token", "M" + rand(URLSAFE, 23) + "." + rand(URLSAFE, 6) + "." + rand(URLSAFE, 27), "bot {v}")
    add("mailchimp-key", rand(HEX, 32) + "-us14", "Newsletter key {v}.")
    add("square-oauth", "sq0" + "csp-" + rand(URLSAFE, 43), "square {v}")
    add("twilio-key", "S" + "K" + rand(HEX, 32), "twilio {v}")
    add("google-key", "AI" + "za" + rand(URLSAFE, 35), "maps: {v}")
    add("huggingface-token", "h" + "f_" + rand(UPPER + LOWER, 34), "HF: {v}")
    add("groq-key", "gs" + "k_" + mixed(52), "groq {v}")
    add("shopify-token", "shp" + "at_" + rand(HEX, 32), "shop {v}")
    add("digitalocean-token", "do" + "p_v1_" + rand(HEX, 64), "droplets {v}")
    add("databricks-token", "da" + "pi" + rand(HEX, 32), "spark {v}")
    add("postman-key", "PM" + "AK-" + rand(HEX, 24) + "-" + rand(HEX, 34), "postman {v}")
    add("sentry-token", "sn" + "trys_" + mixed(60), "SENTRY_AUTH_TOKEN={v}")
    add("grafana-token", "gl" + "sa_" + mixed(32) + "_" + rand(HEX, 8), "grafana {v}")
    add("age-key", "AGE-SECRET" + "-KEY-1" + rand("QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L", 58), "age {v}")
    add("linear-key", "lin" + "_api_" + mixed(40), "linear {v}")
    add("artifactory-token", "AK" + "C" + mixed(69), "ARTIFACTORY_TOKEN={v}")
    add("ibm-cloud-iam-key", rand(URLSAFE, 44), 'IBM_CLOUD_IAM_KEY = "{v}"')
    add("cloudant-password", rand(HEX, 64), "cloudant_password = '{v}'")
    add("softlayer-key", rand(LOWER + DIGITS, 64), "softlayer_api_key = {v}")
    add("ibm-cos-hmac", rand(HEX, 48), 'ibm_cos_hmac_secret_access_key = "{v}"')
    add("password", password(), 'DB_PASSWORD="{v}"')
    add("password-in-a-call", password(), 'db = connect(user="app", password="{v}")')
    add("password-xml", password(), "<datasource><password>{v}</password></datasource>")
    add("password-curl", password(), "curl -u admin:{v} https://ci.example.com/api/json")
    add("password-netrc", password(), "machine api.example.com login deploy password {v}")
    add("uuid-api-key", f"{rand(HEX, 8)}-{rand(HEX, 4)}-{rand(HEX, 4)}-{rand(HEX, 4)}-{rand(HEX, 12)}",
        "HEROKU_API_KEY={v}")
    add("slack-app-token", "xa" + "pp-1-" + mixed(11) + "-" + rand(DIGITS, 13) + "-" + rand(HEX, 64), "app {v}")
    add("gcp-oauth-secret", "GOC" + "SPX-" + rand(URLSAFE, 28), "client secret {v}")
    add("stripe-webhook-secret", "wh" + "sec_" + mixed(32), "webhooks are signed with {v}")
    add("client-secret", mixed(32), "client_secret: {v}")
    add("bearer-token", mixed(40), "curl -H 'Authorization: Bearer {v}' https://api.example.com")
    add("basic-auth-header", base64.b64encode(f"ops:{password()}".encode()).decode(), "Authorization: Basic {v}")
    add("access-token", mixed(28), "ACCESS_TOKEN={v}")
    add("high-entropy-string", rand(B64, 44), '"signing_key": "{v}"')
    for kind, label in (("private-key-rsa", "RSA "), ("private-key-openssh", "OPENSSH ")):
        block, line = private_key(label)
        out.append((kind, block, line))
    return out


PLANTED = planted()
FILE_NAME_SECRET = "gl" + "pat-" + mixed(20)
FRONT_MATTER_SECRET = "gh" + "p_" + mixed(36)
DOCX_TITLE_SECRET = "sk" + "_live_" + mixed(24)
SECTION_SECRET = "xo" + "xp-" + rand(DIGITS, 12) + "-" + rand(DIGITS, 12) + "-" + mixed(24)
NOTE_SECRET = "AK" + "IA" + rand(UPPER + DIGITS, 16)
VALUES = [value for _, _, value in PLANTED] + [FILE_NAME_SECRET, FRONT_MATTER_SECRET, DOCX_TITLE_SECRET,
                                                SECTION_SECRET, NOTE_SECRET]


def test_every_planted_kind_is_found_and_only_its_value_replaced() -> None:
    assert len(PLANTED) >= 40
    for kind, line, value in PLANTED:
        redacted, kinds = scan(line)
        assert value not in redacted and kinds, (kind, redacted)
        if kind.startswith("private-key"):
            assert redacted == "[REDACTED:private-key]", redacted  # the block is the value
            continue
        # Only the value: what was before and after it on the line stays as it was.
        before, _, after = line.partition(value)
        assert redacted.startswith(before) and redacted.endswith(after), (kind, redacted)


@pytest.fixture
def log_lines() -> Iterator[io.StringIO]:
    """Log records as the daemon's handlers write them (the real formatter and SafeLogFilter)."""
    stream = io.StringIO()
    handler = make_handler(logging.StreamHandler(stream))
    root = logging.getLogger()
    level = root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    try:
        yield stream
    finally:
        root.removeHandler(handler)
        root.setLevel(level)


def _docx(title: str, paragraphs: list[str]) -> bytes:
    from docx import Document

    document = Document()
    document.core_properties.title = title
    for text in paragraphs:
        document.add_paragraph(text)
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def _vault_text(services: Services) -> str:
    """Everything in the vault a person or a push would see: pages, REVIEW.md, logs, config."""
    root = services.vault.root
    skip = (root / "raw", root / ".git", services.vault.state)
    parts = []
    for path in root.rglob("*"):
        if path.is_file() and not any(path.is_relative_to(s) for s in skip):
            parts.append(str(path.relative_to(root)) + "\n" + path.read_text(encoding="utf-8", errors="replace"))
    return "\n".join(parts)


def test_no_planted_secret_reaches_a_prompt_a_page_a_commit_a_daily_log_or_a_log_line(
        services: Services, log_lines: io.StringIO) -> None:
    root = services.vault.root
    with ScriptedServer([], default=reply(title="Ops notes", summary="How the services are run.")) as server:
        use_model(services, server)
        # Sources of eight planted lines each, the way a handover note pastes them.
        for n in range(0, len(PLANTED), 8):
            lines = "\n\n".join(line for _, line, _ in PLANTED[n:n + 8])
            services.drop(f"ops/handover-{n // 8}.md", f"# Handover part {n // 8}\n\nHow we run billing.\n\n{lines}\n")
        services.drop(f"ops/deploy-{FILE_NAME_SECRET}.md", "# Deploy\n\nThe deploy runs every Tuesday at noon.\n")
        services.drop("ops/release.md", f"---\ntitle: Release {FRONT_MATTER_SECRET}\napi_token: {FRONT_MATTER_SECRET}\n"
                      "---\n\n# Release\n\nReleases are cut on Mondays and shipped on Tuesdays.\n")
        services.drop("ops/runbook.docx", _docx(f"Runbook {DOCX_TITLE_SECRET}",
                                                ["The runbook explains the billing service.",
                                                 f"Payments use {DOCX_TITLE_SECRET} in production."]))
        results = services.drain()
        assert sorted(r.state for r in results) == ["ingested"] * len(results) and len(results) >= 9, results
        prompts = "\n".join(prompt_text(request) for request in server.requests)
    logged = cli("log", "--vault", str(root), "--section", f"deploy {SECTION_SECRET}",
                 f"🔴 Rotated the deploy key; the old one was {NOTE_SECRET}")
    assert logged.returncode == 0, logged.stderr
    daily = "".join(p.read_text(encoding="utf-8") for p in services.vault.logs.glob("*.md"))
    history = git(root, "log", "-p", "--all", "--format=%H%n%B")
    names = git(root, "log", "--all", "--name-only", "--format=")
    vault_text = _vault_text(services)
    log_text = log_lines.getvalue() + logged.stderr
    assert "### " in daily and "Rotated the deploy key" in daily  # the note itself is kept
    leaks = {}
    for value in VALUES:
        where = [name for name, text in (("prompt", prompts), ("vault", vault_text), ("git", history + names),
                                         ("daily log", daily), ("log line", log_text)) if value in text]
        if where:
            leaks[value[:12] + "…"] = where
    assert not leaks, leaks
    # What each place says instead: the kind, never the value.
    assert "[REDACTED:aws-key]" in prompts and "[REDACTED:private-key]" in prompts
    sources = services.vault.sources_dir
    kinds = set()
    for page in sources.glob("*.md"):
        kinds |= set(parse_page(page.read_text(encoding="utf-8")).meta.get("secrets") or [])
    assert {"aws-key", "github-token", "azure-storage-key", "azure-sas-token", "npm-token", "basic-auth",
            "connection-string", "sendgrid-key", "telegram-token", "vault-token", "pypi-token", "docker-auth",
            "private-key", "jwt", "password", "slack-token", "stripe-key"} <= kinds, kinds
    assert any("redacted-gitlab-token" in page.name for page in sources.glob("*.md"))  # the name, as shown
    tracked = git(root, "ls-files", "raw").splitlines()
    assert not [path for path in tracked if "handover" in path or "deploy" in path or "release" in path], tracked
    notices = [n["message"] for n in gather(services.config, services.vault)["notices"]]
    assert any("contained secrets" in n for n in notices), notices
    status = cli("status", "--vault", str(root))
    assert status.returncode == 0 and not [v for v in VALUES if v in status.stdout + status.stderr]


PUBLIC_DOCS = '''# Configuring the service

Set the `password` in your config file, or pass `--password` on the command line. The
password: must be at least 12 characters. Never commit a real secret.

```python
import os

SECRET_KEY = os.environ.get("SECRET_KEY")
API_KEY = os.getenv("API_KEY", "")
DATABASE_PASSWORD = settings.DATABASE_PASSWORD
token = config["token"]
db_password = get_password()
app.config["SECRET_KEY"] = "changeme"
client = Client(api_key="your-api-key")
password: Optional[str] = None
```

```yaml
database:
  password: ${DB_PASSWORD}
  secret: "{{ vault_secret }}"
  api_key: <your-api-key>
  token: "***"
```

Connect with `postgres://user:<password>@localhost/db` or `redis://:${REDIS_PASSWORD}@cache:6379`.
Use `export OPENAI_API_KEY=sk-...` and `ANTHROPIC_API_KEY=sk-ant-...`. In a template:
`password = $PASSWORD`, `key = %(key)s`.
'''

CODE_LINES = ['SECRET_KEY = os.environ.get("SECRET_KEY")', 'API_KEY = os.getenv("API_KEY", "")',
              "DATABASE_PASSWORD = settings.DATABASE_PASSWORD", 'token = config["token"]',
              'app.config["SECRET_KEY"] = "changeme"', 'client = Client(api_key="your-api-key")',
              "  password: ${DB_PASSWORD}", "`postgres://user:<password>@localhost/db`"]


def test_public_documentation_is_ingested_and_committed_unredacted_with_its_code_intact(
        services: Services) -> None:
    assert scan(PUBLIC_DOCS) == (PUBLIC_DOCS, [])
    with ScriptedServer([], default=reply(title="Configuring the service", summary="How to configure it.")) as server:
        use_model(services, server)
        services.drop("docs/configuring.md", PUBLIC_DOCS)
        assert [r.state for r in services.drain()] == ["ingested"]
        prompts = "\n".join(prompt_text(request) for request in server.requests)
    for line in CODE_LINES:
        assert line in prompts, line  # the model reads the code as written
    assert "REDACTED" not in prompts
    root = services.vault.root
    assert git(root, "ls-files", "raw").splitlines() == ["raw/docs/configuring.md"]  # committed
    assert git(root, "show", "HEAD:raw/docs/configuring.md") == PUBLIC_DOCS
    page = (services.vault.sources_dir / "src-configuring.md").read_text(encoding="utf-8")
    assert "REDACTED" not in page and "secrets" not in parse_page(page).meta and "## Secrets" not in page
    assert not [n for n in gather(services.config, services.vault)["notices"] if "secret" in n["message"]]


NOT_SECRETS = [
    '"public_key": "MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAu1SU1LfVLPHCozMxH2Mo"',
    '"integrity": "sha512-Q2hlY2tzdW1zIGFyZSBub3Qgc2VjcmV0cywgdGhleSBhcmUgcHVibGlj"',
    "requests must be sent with bearer authentication and retried",
    "[![codecov](https://codecov.io/gh/org/proj/branch/main/graph/badge.svg?token=id42cGNZ5Z)](https://codecov.io)",
    "password: str = Field(..., min_length=12)",
    "def login(username: str, password: str) -> Session:",
    "self.api_key = api_key",
    "secret_key = request.headers['X-Secret']",
    "SECRET_KEY = env('DJANGO_SECRET_KEY')",
    "export API_TOKEN=$(vault read -field=token secret/ci)",
    'OPENAI_API_KEY="My API Key"',
    "password = not-a-real-secret",
    "--password=PASSWORD  the database password",
]


@pytest.mark.parametrize("text", NOT_SECRETS)
def test_what_only_talks_about_a_secret_is_left_as_written(text: str) -> None:
    assert scan(text) == (text, [])
