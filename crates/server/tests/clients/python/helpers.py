"""Small helpers the suite's test files share."""

from __future__ import annotations

from datetime import datetime, timedelta


def status_of(exc_info) -> int:
    """The HTTP status of the SDK error a `pytest.raises` caught."""
    return exc_info.value.response.status_code


def parse_ts(s: str) -> datetime:
    """An API timestamp, which must be in UTC."""
    dt = datetime.fromisoformat(s)
    assert dt.tzinfo is not None and dt.utcoffset() == timedelta(0), s
    return dt
