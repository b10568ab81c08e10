"""Hypothesis strategies that draw discharge-fuzz cases (the IR in `fuzz.ir`).

Import each from its module: `strategies.semaphores` and
`strategies.transforms` draw declarations and view transforms (the ops
draw with them too), `strategies.programs` whole programs over the ops.
Nothing is re-exported here, so that importing a leaf loads no ops."""
