"""Communication patterns on a mesh, drawn whole as collective kernels
write them, so that every valid one is race- and deadlock-free by
construction: a ring shift, a neighbour exchange, an all-gather, each
after a barrier (or, one time in four, not: a race with the receiver's
kernel start). Each device runs the same
statements, and each device they name is a shift along the mesh
(`ir.MeshIndex`), which is what the model's lockstep needs
(`fuzz.model._over_devices`). One pattern in four is then broken at one
wait, as `fuzz.ops.dma.order.mutants` breaks local copies: the model
must call the result a deadlock, a race or a copy left in flight.

The statements' JAX forms: ``pltpu.make_async_remote_copy(src, dst,
send_sem, recv_sem, device_id={"x": ...})`` with ``.start()``,
``.wait_send()`` and ``.wait_recv()``; ``pl.semaphore_signal(sem, inc,
device_id={"x": ...})``; ``pltpu.get_barrier_semaphore()`` in a kernel
with a ``collective_id`` (a `ir.COLLECTIVE` ref).
"""
from __future__ import annotations

import dataclasses

from hypothesis import strategies as st

from fuzz import ir
from fuzz.ops.dma.order import mutants
from fuzz.ops.dma.start import DmaStart
from fuzz.ops.dma.wait import DmaWait
from fuzz.ops.semaphore import Signal, Wait

PATTERNS = ("ring_shift", "exchange", "all_gather")


def _copy(src, dst, sems: tuple[ir.View, ir.View], device_id):
    """A copy's start and a function of its waits (``wait_send`` then
    ``wait_recv``, as one ``.wait()`` or two), counted on ``sems`` (send,
    receive)."""
    send, recv = sems
    start = DmaStart(src, dst, recv, send, device_id=device_id)

    def waits(methods):
        return tuple(DmaWait(src, dst, recv, send, m, device_id=device_id) for m in methods)
    return start, waits


def on_mesh(refs: tuple[ir.Ref, ...], body: tuple, devices: int) -> st.SearchStrategy:
    """A pattern of communication for a program on a mesh of ``devices``:
    the family's ``ON_MESH`` hook for DmaStart."""
    return communication(refs, devices, body=body)


@st.composite
def communication(draw, refs: tuple[ir.Ref, ...], devices: int, patterns=PATTERNS, *,
                  body: tuple = ()):
    """(the refs it adds to ``refs``, its statements): one pattern over a
    data ref of ``refs`` that ``body`` counts nothing on (a new int32 one
    if there is none) on a mesh of ``devices``.

    >>> refs, body = communication((ir.Ref("int32", (2,)),), 2, ("ring_shift",)).example()
    >>> {type(s).__name__ for s in body} <= {"DmaStart", "DmaWait", "Signal", "Wait"}
    True
    """
    if not 1 <= devices <= ir.MAX_DEVICES:
        raise ValueError(f"devices={devices!r}: a mesh has 1 to {ir.MAX_DEVICES}")
    counted = {v.ref for s in ir.flat(body) for v in s.counted()}   # an int16 stand-in
    usable = [i for i, r in enumerate(refs)
              if not r.is_semaphore and 0 not in r.shape and i not in counted]
    new: list[ir.Ref] = []

    def ref(r: ir.Ref) -> int:
        new.append(r)
        return len(refs) + len(new) - 1

    a = draw(st.sampled_from(usable)) if usable else ref(ir.Ref("int32", (2,)))
    source = refs[a] if a < len(refs) else new[0]
    twin = dataclasses.replace(source, scoped=False, aliased=False, memory_space=None)
    shifts = st.sampled_from(tuple(dict.fromkeys((1, -1, 0, 2 % devices, devices - 1))))
    waits = st.sampled_from((("wait",), ("wait_read", "wait_write"), ("wait_write", "wait_read")))
    pattern = draw(st.sampled_from(tuple(patterns)))

    def semaphores():
        """A send and a receive semaphore: two ()-shaped DMA semaphores, or
        (one time in three) the two rows of one array."""
        if draw(st.integers(0, 2)) < 2:
            return ir.View(ref(ir.Ref("dma", ()))), ir.View(ref(ir.Ref("dma", ())))
        rows = ref(ir.Ref("dma", (2,)))
        return tuple(ir.View(rows, (ir.At((ir.Int(k),)),)) for k in (0, 1))
    body: tuple = ()
    if pattern == "ring_shift":
        dst = ref(twin)
        start, wait = _copy(ir.View(a), ir.View(dst), semaphores(), ir.MeshIndex(draw(shifts)))
        body += (start, *wait(draw(waits)))
    elif pattern == "exchange":
        right, left = ref(twin), ref(twin)
        to_right, wait_right = _copy(ir.View(a), ir.View(right), semaphores(), ir.MeshIndex(1))
        to_left, wait_left = _copy(ir.View(a), ir.View(left), semaphores(), ir.MeshIndex(-1))
        body = (to_right, to_left, *wait_right(draw(waits)), *wait_left(draw(waits)))
    elif pattern == "all_gather":
        # Each device's block goes to its own row of every device's
        # gathered buffer: a local copy, and one remote copy to each other
        # device, all counted on one pair of semaphores.
        gathered = ref(dataclasses.replace(twin, shape=(devices, *twin.shape)))
        sems = semaphores()
        mine = ir.View(gathered, (ir.At((ir.MeshIndex(0),)),))
        starts, ends = [], []
        for k in range(devices):
            start, wait = _copy(ir.View(a), mine, sems, ir.MeshIndex(k) if k else None)
            if not k:   # the local copy: counted on the receive row alone
                start = dataclasses.replace(start, src_sem=None)
                ends.append(dataclasses.replace(wait(("wait",))[0], src_sem=None))
            else:
                ends += wait(draw(waits))
            starts.append(start)
        body = (*starts, *ends)
    if draw(st.integers(0, 3)):
        body = (*_barrier(ref, body, devices), *body)
    return tuple(new), draw(mutants(body))


def _barrier(ref, body, devices):
    """Each device tells the devices whose copies land in it (as far
    behind as each copy's target is ahead) that it is ready, on the
    barrier semaphore (``pltpu.get_barrier_semaphore()``), and waits to
    hear from as many: a copy then lands after all its receiver did
    before, the kernel's start included. Without it, the copies race
    with that start: what the HLO interpreter, which runs devices in
    lockstep, gives a meaning anyway (`fuzz.model.Meaning.lockstep`)."""
    senders = dict.fromkeys(-s.device_id.offset % devices for s in body
                            if isinstance(s, DmaStart) and s.device_id is not None
                            and s.device_id.offset % devices)
    if not senders:
        return ()
    barrier = ir.View(ref(ir.Ref("barrier", (), memory_space=ir.COLLECTIVE)))
    return (*(Signal(barrier, ir.Int(1), device_id=ir.MeshIndex(k)) for k in senders),
            Wait(barrier, ir.Int(len(senders))))
