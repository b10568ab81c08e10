"""The oracles: one module each (or one per small family), holding its
failure class *and* its comparison; `fuzz.oracles.base` says how an oracle
is written, `fuzz.oracles.tiers.check` runs them all on a case.

Importing the package imports every module in it, so that every oracle
registers: adding one is adding its module.
"""
from __future__ import annotations

import importlib
import pkgutil

from fuzz.oracles.base import SEVERITIES, CaseReport, OracleFailure, class_of, names, registered
from fuzz.oracles.tiers import check

for _module in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_module.name}")

ORACLES: tuple[type[OracleFailure], ...] = tuple(registered())
ORACLE_NAMES: tuple[str, ...] = names()

__all__ = ["CaseReport", "OracleFailure", "ORACLES", "ORACLE_NAMES", "SEVERITIES", "check",
           "class_of"]
