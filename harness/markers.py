"""The markers the tool ledger puts in every tool result, and the one rule that reads them back.

Shared by the ledger (which writes them) and the scripted model server (which branches on what came back),
so neither imports the other. A real result starts with `[loopbench-receipt:ID]` (first, so a framework that
truncates a huge output keeps it); an error carries `[loopbench-error:KIND:ID]`.
"""

from __future__ import annotations

import re
from typing import Literal

RECEIPT_MARK = "[loopbench-receipt:"
ERROR_MARK = "[loopbench-error:"


def receipt(entry_id: str) -> str:
    return f"{RECEIPT_MARK}{entry_id}]"


def error_mark(kind: str, entry_id: str) -> str:
    return f"{ERROR_MARK}{kind}:{entry_id}]"


def without_markers(text: str) -> str:
    """The result as its tool's service said it, without the ledger's markers (ids that differ on every call)."""
    return re.sub(r"\[loopbench-(?:receipt|error):[^\]]*\]\s?", "", text)


def result_status(text: str | None) -> Literal["receipt", "error", "none"]:
    """receipt | error | none, from the markers the ledger puts in results (framework-independent).
    A text carrying both (a framework quoting an earlier result in an error) is an error."""
    if text is None:
        return "none"
    if ERROR_MARK in text:
        return "error"
    if RECEIPT_MARK in text:
        return "receipt"
    return "none"
