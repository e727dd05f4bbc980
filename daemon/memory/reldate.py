"""Relative dates made absolute from the date of the log that says them.

"Yesterday we moved the cron job" in ``logs/2026-11-24.md`` means 2026-11-23; a topic page
read a month later must say so. Only unambiguous phrases are rewritten.
"""

from __future__ import annotations

import re
from datetime import date, timedelta

_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_NUMBERS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "a": 1, "an": 1}
_PREPOSITION = re.compile(r"(?i)\b(since|until|till|from|before|after|by|on|as of|through)\s*$")


def _week_of(day: date) -> date:
    return day - timedelta(days=day.weekday())


def _previous_weekday(day: date, weekday: int) -> date:
    delta = (day.weekday() - weekday) % 7 or 7
    return day - timedelta(days=delta)


def _next_weekday(day: date, weekday: int) -> date:
    delta = (weekday - day.weekday()) % 7 or 7
    return day + timedelta(days=delta)


def _month_before(day: date) -> str:
    first = day.replace(day=1) - timedelta(days=1)
    return f"{first:%Y-%m}"


_DAY_WORDS = r"(?:yesterday|today|tonight|tomorrow|this (?:morning|afternoon|evening))"
_PATTERN = re.compile(
    rf"(?i)\b(?:(?P<dayword>{_DAY_WORDS})"
    r"|(?P<n>\d{1,2}|one|two|three|four|five|six|seven|a|an) (?P<unit>days?|weeks?) ago"
    r"|(?P<which>last|this|next) (?P<span>week|month|year)"
    rf"|(?P<wd_which>last|next|this) (?P<wd>{'|'.join(_WEEKDAYS)})"
    rf"|(?P<on>on) (?P<bare_wd>{'|'.join(_WEEKDAYS)})"
    r")\b"
)


def absolutize(text: str, day: date) -> str:
    """``text`` with relative dates replaced by absolute ones, as seen from ``day``."""

    def replace(match: re.Match[str]) -> str:
        before = text[: match.start()]
        prep = bool(_PREPOSITION.search(before))
        word = match.group(0)
        lead = word[:1].isupper()
        if match.group("dayword"):
            key = match.group("dayword").casefold()
            target = day + timedelta(days={"yesterday": -1, "tomorrow": 1}.get(key, 0))
            out = target.isoformat() if prep else f"on {target.isoformat()}"
        elif match.group("unit"):
            count_text = match.group("n").casefold()
            count = int(count_text) if count_text.isdigit() else _NUMBERS[count_text]
            days = count * (7 if match.group("unit").casefold().startswith("week") else 1)
            target = day - timedelta(days=days)
            out = target.isoformat() if prep else f"on {target.isoformat()}"
            if days >= 7:
                out = f"the week of {_week_of(target).isoformat()}" if not prep else target.isoformat()
        elif match.group("span"):
            which, span = match.group("which").casefold(), match.group("span").casefold()
            shift = {"last": -1, "this": 0, "next": 1}[which]
            if span == "week":
                out = f"the week of {(_week_of(day) + timedelta(weeks=shift)).isoformat()}"
            elif span == "month":
                if shift < 0:
                    out = _month_before(day)
                elif shift == 0:
                    out = f"{day:%Y-%m}"
                else:
                    out = f"{(day.replace(day=28) + timedelta(days=4)):%Y-%m}"
                out = out if prep else f"in {out}"
            else:
                out = str(day.year + shift) if prep else f"in {day.year + shift}"
        elif match.group("wd"):
            weekday = _WEEKDAYS.index(match.group("wd").casefold())
            which = match.group("wd_which").casefold()
            if which == "last":
                target = _previous_weekday(day, weekday)
            elif which == "next":
                target = _next_weekday(day, weekday)
            else:
                target = _week_of(day) + timedelta(days=weekday)
            out = f"{target.isoformat()}" if prep else f"on {target.isoformat()}"
            out += f" ({target:%A})"
        else:
            weekday = _WEEKDAYS.index(match.group("bare_wd").casefold())
            # "on Monday" in a log: the most recent one, or the day itself.
            target = day if day.weekday() == weekday else _previous_weekday(day, weekday)
            out = f"on {target.isoformat()} ({target:%A})"
        if lead and out[:1].islower():
            out = out[:1].upper() + out[1:]
        return out

    return _PATTERN.sub(replace, text)
