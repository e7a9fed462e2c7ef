"""Rows of the state database read back as models, one way for every table.

A leaf of `tpu_runtime.remote` (the store imports the audit log): audit rows, requests, approvals and loop
attempts are all read through it.
"""

from __future__ import annotations

import sqlite3
from typing import TypeVar

from pydantic import BaseModel

__all__ = ["row_model"]

M = TypeVar("M", bound=BaseModel)


def row_model(model: type[M], row: sqlite3.Row, **decoded: object) -> M:
    """A row of the state database as `model`: each field from the column of its name, except those
    passed in `decoded` (a column stored as JSON, read back by the caller)."""
    fields = {key: row[key] for key in model.model_fields if key not in decoded}
    return model.model_validate({**fields, **decoded})
