"""The scripted model server lives in the package (``wikiwright eval`` runs on it); tests import it here."""

from wikiwright.ingest.scripted_server import (
    DUMMY_KEY,
    KEY_ENV,
    MODEL,
    Fault,
    Script,
    ScriptedServer,
    hang,
    http_error,
    iter_prompts,
    prompt_text,
    rate_limited,
    truncated,
    user_prompt,
)

__all__ = ["DUMMY_KEY", "KEY_ENV", "MODEL", "Fault", "Script", "ScriptedServer", "hang", "http_error", "iter_prompts",
           "prompt_text", "rate_limited", "truncated", "user_prompt"]
