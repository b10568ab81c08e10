"""Hypothesis strategies that draw discharge-fuzz cases (the IR in `fuzz.ir`)."""
from strategies.programs import grids, invalid_programs, operands, programs, statements
from strategies.semaphores import semaphore_kinds, semaphore_shapes, semaphores
from strategies.transforms import (at_indexers, index_operands, reshapes,
                                   scalar_indexers, transform_chains)

__all__ = ["at_indexers", "grids", "index_operands", "invalid_programs", "operands",
           "programs", "reshapes", "scalar_indexers", "semaphore_kinds",
           "semaphore_shapes", "semaphores", "statements", "transform_chains"]
