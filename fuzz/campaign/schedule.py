"""Cost-aware scheduling: which of the costly paths and oracles a case gets.

Every case runs the cheap ones. A costly one (``COST`` of at least
`COSTLY`, read from its own module: a path module's ``COST``, an oracle
class's ``COST``) runs on a case that brings it a feature it has not
worked on yet (`features`: a kind of statement, wrapper, loop, ref, a grid,
a mesh; with ``--schedule pairs``, each pair of them too), and otherwise at
its floor rate, ``FLOOR / COST`` of the cases, so that none starves. A unit
has worked on a case where it ran and did something: a path that ran it,
an oracle that compared. A worker keeps one `Scheduler`; ``--schedule
all`` runs everything on every case instead.

Example::

    plan = scheduler.plan(case)      # paths and oracles to run
    report = oracles.check(case, on_paths=plan.paths, oracles=plan.oracles)
    scheduler.ran(case, plan, worked)   # worked: the units that did something
"""
from __future__ import annotations

import itertools
import random
from dataclasses import dataclass

from fuzz import ir, oracles, paths
from fuzz.campaign import SCHEDULES

COSTLY = 3     # a path or oracle with a COST this high (or higher) is scheduled
FLOOR = 2.0    # ...and runs on at least FLOOR / COST of the cases


@dataclass(frozen=True)
class Plan:
    paths: tuple[str, ...]
    oracles: tuple[str, ...]
    skipped: tuple[str, ...]   # the costly ones left out of this case


def features(case: ir.Case) -> frozenset[str]:
    """What a case is made of, as a costly unit's coverage counts it."""
    found = {f"ref:{r.kind}" + (":scoped" if r.scoped else "") for r in case.refs}
    for s in ir.flat(case.body):
        found.add(f"statement:{s.tag}" + (f":{s.via}" if isinstance(getattr(s, "via", None), str) else ""))
    found.update(name for name, on in (("grid", case.grid is not None),
                                       ("mesh", case.devices is not None), ("x64", case.x64),
                                       ("invalid", not case.valid)) if on)
    return frozenset(found)


def _costs() -> dict[str, int]:
    """Each path's and oracle's cost, by name, as its module states it."""
    costs = {name: paths.COST[name] for name in paths.NAMES}
    for cls in oracles.ORACLES:
        costs[cls.oracle] = max(costs.get(cls.oracle, 0), cls.COST)
    return costs


class Scheduler:
    """One worker's schedule: the features each costly unit has run on."""

    def __init__(self, seed: int | None = None, mode: str = "cost",
                 on_paths=None, only_oracles=None):
        if mode not in SCHEDULES:
            raise ValueError(f"unknown schedule {mode!r}; known: {', '.join(SCHEDULES)}")
        self.mode = mode
        self.paths = tuple(on_paths or paths.NAMES)
        self.oracles = tuple(only_oracles or oracles.ORACLE_NAMES)
        self.cost = _costs()
        self.covered: dict[str, set[str]] = {}
        self._random = random.Random(seed)

    def _features(self, case: ir.Case) -> frozenset[str]:
        have = features(case)
        if self.mode == "pairs":
            have |= {f"{a}&{b}" for a, b in itertools.combinations(sorted(have), 2)}
        return have

    def plan(self, case: ir.Case, *, everything: bool = False) -> Plan:
        """The paths and oracles ``case`` runs; with ``everything``, all of
        them (a filed regression's replay: a unit skipped there would read
        as its bug fixed)."""
        if self.mode == "all" or everything:
            return Plan(self.paths, self.oracles, ())
        have = self._features(case)
        skipped = tuple(unit for unit in (*self.paths, *self.oracles)
                        if self.cost.get(unit, 0) >= COSTLY
                        and have <= self.covered.get(unit, set())
                        and self._random.random() >= FLOOR / self.cost[unit])
        return Plan(tuple(p for p in self.paths if p not in skipped),
                    tuple(o for o in self.oracles if o not in skipped), skipped)

    def ran(self, case: ir.Case, plan: Plan, worked=None):
        """Count ``case``'s features as covered by the costly units it ran
        that did something (``worked``: their names; None: all it ran). One
        that did nothing here (an oracle that did not apply) has not covered
        them: a case where it applies brings them to it still."""
        have = self._features(case)
        for unit in (*plan.paths, *plan.oracles):
            if self.cost.get(unit, 0) >= COSTLY and (worked is None or unit in worked):
                self.covered.setdefault(unit, set()).update(have)
