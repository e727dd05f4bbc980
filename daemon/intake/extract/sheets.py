"""Spreadsheets (openpyxl) and CSV files as a readable digest of their structure.

Not a dump: for each sheet its size, its header row, and the first rows as a markdown table,
with the number of rows not shown said in words (nothing is cut silently).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable
from typing import Any

from ...core.errors import SourceRejected
from .office import markdown_table

SAMPLE_ROWS = 5
MAX_COLUMNS = 12
MAX_SHEETS = 30


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return " ".join(str(value).split())


def _digest_rows(name: str, rows: Iterable[Iterable[Any]]) -> tuple[str, int]:
    """A sheet's section and its data row count."""
    header: list[str] | None = None
    sample: list[list[str]] = []
    count = 0
    width = 0
    for raw in rows:
        row = [_text(v) for v in raw]
        while row and not row[-1]:
            row.pop()
        if not any(row):
            continue
        if header is None:
            header = row
            continue
        count += 1
        width = max(width, len(row))
        if len(sample) < SAMPLE_ROWS:
            sample.append(row)
    if header is None:
        return f"## {name}\n\nEmpty sheet.", 0
    columns = max(len(header), width)
    shown_columns = min(columns, MAX_COLUMNS)
    lines = [f"## {name}", "",
             f"{count} data row(s) × {columns} column(s). Columns: "
             + ", ".join(h or f"(column {i + 1})" for i, h in enumerate(header[:MAX_COLUMNS]))
             + (f", and {columns - MAX_COLUMNS} more" if columns > MAX_COLUMNS else "") + "."]
    if sample:
        table = [header[:shown_columns] + [""] * (shown_columns - len(header[:shown_columns]))]
        table += [r[:shown_columns] for r in sample]
        lines += ["", f"First {len(sample)} row(s):", "", markdown_table(table)]
        if count > len(sample):
            lines += ["", f"… {count - len(sample)} more row(s) not shown."]
    return "\n".join(lines), count


def read_xlsx(data: bytes) -> tuple[str, str]:
    try:
        import openpyxl
    except ImportError:  # pragma: no cover - a default dependency
        raise SourceRejected("unsupported", "spreadsheets need the openpyxl package") from None
    try:
        book = openpyxl.load_workbook(io.BytesIO(data), read_only=True, data_only=True)
    except Exception as exc:
        raise SourceRejected("unreadable", f"is not a readable spreadsheet ({type(exc).__name__}: {exc})") from None
    try:
        names = book.sheetnames
        sections = []
        for name in names[:MAX_SHEETS]:
            section, _ = _digest_rows(name, book[name].iter_rows(values_only=True))
            sections.append(section)
        title = (book.properties.title or "").strip() if book.properties else ""
    finally:
        book.close()
    intro = f"A spreadsheet with {len(names)} sheet(s): {', '.join(names[:MAX_SHEETS])}"
    if len(names) > MAX_SHEETS:
        intro += f", and {len(names) - MAX_SHEETS} more not shown"
    return intro + ".\n\n" + "\n\n".join(sections) + "\n", " ".join(title.split())


def read_csv(text: str, name: str) -> str:
    try:
        dialect = csv.Sniffer().sniff(text[:4096], delimiters=",;\t|")
    except csv.Error:
        dialect = csv.excel
    rows = csv.reader(io.StringIO(text), dialect)
    section, count = _digest_rows(name, rows)
    return f"A table of {count} row(s).\n\n" + section + "\n"
