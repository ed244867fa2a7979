"""One line of ``patchwarden doctor``'s report, shared by its checks (doctor.py,
doctor_model.py)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Check:
    name: str
    status: str  # "ok" | "warn" | "fail"
    detail: str
