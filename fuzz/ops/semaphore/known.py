"""Findings in real, unpatched JAX on semaphore statements that the
properties already know about (matched by `fuzz.suppressions.known_findings`)."""
from __future__ import annotations

from fuzz import ir
from fuzz.severity import CRASH, REFUSED, USABILITY
from fuzz.ops.base import NO_INDEXER_SHAPE, KnownFinding, Trigger
from fuzz.ops.ref.common import Iota
from fuzz.ops.ref.swap import Swap
from fuzz.ops.semaphore.read import Read
from fuzz.ops.semaphore.signal import Signal
from fuzz.ops.semaphore.wait import Wait


def _transforms(case: ir.Case, k: int):
    """The transforms of statement ``k``'s views (a copy has several)."""
    return tuple(t for v in ir.views(case.statements[k]) for t in v.transforms)


def _is(*kinds):
    return lambda case, k: isinstance(case.statements[k], kinds)


def _both(*triggers: Trigger) -> Trigger:
    return lambda case, k: all(t(case, k) for t in triggers)


def _has(kind) -> Trigger:
    return lambda case, k: any(isinstance(t, kind) for t in _transforms(case, k))


def _collapsing_wait(case, k) -> bool:
    """A non-decrementing wait through a view that is not the whole ref."""
    stmt = case.statements[k]
    return (isinstance(stmt, Wait) and not stmt.decrement and bool(stmt.view.transforms)
            and case.refs[stmt.view.ref].shape != ())


def _last_transform_not_indexer(case, k) -> bool:
    chain = _transforms(case, k)
    return bool(chain) and not isinstance(chain[-1], ir.At)


def _indexes_zero_size(case, k) -> bool:
    return 0 in case.refs[case.statements[k].view.ref].shape and _has(ir.At)(case, k)


def _non_scalar_read(case, k) -> bool:
    if not isinstance(case.statements[k], Read):
        return False
    try:
        return ir.view_shape(case, case.statements[k].view) != ()
    except ir.IRError:
        return True


def _data_dtype_read(case, k) -> bool:
    return (isinstance(case.statements[k], Read)
            and case.refs[case.statements[k].view.ref].kind not in ir.SEMAPHORE_KINDS)


def _strided_and_int_index(case, k) -> bool:
    """A strided slice and an integer index in one chain (s.at[0, ::2].at[0],
    s.reshape(..).at[:, 0, ::2])."""
    indices = [i for t in _transforms(case, k) if isinstance(t, ir.At) for i in t.indices]
    return (any(isinstance(i, ir.Slice) and i.step not in (None, 1) for i in indices)
            and any(isinstance(i, ir.Int) for i in indices))


def _static_beside_dynamic_int(case, k) -> bool:
    """A static and a dynamic integer index in one indexer (r[0, i]): under
    jax.vmap the batched ``i`` makes the indexer a gather, as a strided
    slice does."""
    return any(isinstance(t, ir.At) and {i.dynamic for i in t.indices if isinstance(i, ir.Int)}
               == {True, False} for t in _transforms(case, k))


def _reshape_then_more(case, k) -> bool:
    """A reshape that another transform follows (which then reads the value
    before the reshape)."""
    return any(isinstance(t, ir.Reshape) for v in ir.views(case.statements[k])
               for t in v.transforms[:-1])


_SIGNAL_OR_WAIT = _is(Signal, Wait)


def _plain_ref_before_in_a_scope(case, k) -> bool:
    """A statement on a kernel semaphore, in a kernel that allocates with
    run_scoped and uses a plain ref passed before it (``dyn``, ``out`` or a
    data ref): the refs 0.6's run_scoped rule skips."""
    sems = [v.ref for v in ir.views(case.statements[k])
            if case.refs[v.ref].is_semaphore and not case.refs[v.ref].scoped]
    used = {v.ref for s in case.statements for v in ir.views(s)}
    return bool(sems) and any(r.scoped for r in case.refs) and (
        bool(case.dynamic_values) or bool(case.num_reads)
        or any(not case.refs[r].is_semaphore and not case.refs[r].scoped and r < max(sems)
               for r in used))


def _case(sem, *body, expect=None):
    return ir.Case((sem,), tuple(body), expect=expect)


_AT0 = ir.View(0, (ir.At((ir.Int(0),)),))
_INVALID = "invalid-rejected"

KNOWN_FINDINGS: tuple[KnownFinding, ...] = (
    KnownFinding(
        "wait-nondecrement-collapses-ref",
        "semaphore_wait(decrement=False) discharge returns the transformed "
        "(scalar) view as the new value of the whole semaphore ref",
        symptoms=(("aval-preserved",
                   r"semaphore_wait\[decrement=False\] returned a new value \w+\[\] "),),
        consequences=(
            ("abstract-concrete", r"final r\d+ is int16\[\]; abstract evaluation promised int16\[\d"),
            ("model-vs-path", r"^final r\d+ has shape \(\), expected \(\d"),
            # Every element of the collapsed ref reads as the one it kept.
            ("model-vs-path", r"^read \d+(?: at grid point \d+)? is -?\d+, expected -?\d+$"),
            ("partial-discharge", r"raised ValueError: Cannot lower jaxpr with verifier errors|"
                                  r"while_loop body function carry input and carry output must "
                                  r"have equal types"),
            # The collapsed ref flows on through a pallas_call's write-back.
            (_INVALID, r"TypeError: broadcast_in_dim broadcast_dimensions must have length"),
            # ...and out of the control flow and wrappers around the wait.
            ("aval-preserved", r"^(run_scoped|scan|while|cond|jit|remat2|custom_vjp_call|"
                               r"custom_vmap_call|shard_map|eval_jaxpr) returned a new value int16\[\] for "
                               r"operand"),
            # Later signals and waits on the collapsed ref see a scalar value.
            ("aval-preserved", r"^semaphore_(signal|wait\[decrement=True\]) returned a new "
                               r"value \w+\[\] for operand 0"),
            ("valid-runs", r"while_loop body function carry input and carry output must have equal types"),
            # ...into a custom_vjp or custom_vmap function's rule, which then
            # pairs the collapsed ref with the wrong aval.
            ("valid-runs", r"ValueError: safe_map\(\) argument 2 is longer than argument 1"),
            (_INVALID, r"while_loop body function carry input and carry output must have equal types"),
            ("valid-runs", r"Length of slice indices must match number of operand dimensions \(\d+ vs \(\)\)"),
            ("valid-runs", r"IndexError: Too many indices: array is 0-dimensional"),
            # ...indexed, transposed or scanned over as the shape it had.
            ("valid-runs", r"TypeError: Invalid start_index_map; domain is \[0, 0\)|"
                           r"TypeError: transpose permutation isn't a permutation of operand "
                           r"dimensions, got permutation \([\d, ]*\) for operand shape \(\)|"
                           r"TypeError: slice start_indices must have length equal to the number "
                           r"of dimensions of the operand, got indices \([\d, ]*\) for operand "
                           r"shape \(\)|IndexError: list assignment index out of range"),
            ("valid-runs", r"ValueError: Cannot lower jaxpr with verifier errors"),
            ("valid-runs", r"ValueError: axis \d+ is out of bounds for array of dimension 0"),
            # ...and in invalid programs, before their own mistake is reached.
            (_INVALID, r"Length of slice indices must match number of operand dimensions \(\d+ vs \(\)\)"),
            (_INVALID, r"^(IndexError: Too many indices: array is 0-dimensional|"
                       r"ValueError: Cannot lower jaxpr with verifier errors)"),
            # A later view reshapes the collapsed (scalar) ref (seen on 0.10).
            ("valid-runs", r"TypeError: cannot reshape array of shape \(\) \(size 1\)"),
            (_INVALID, r"^TypeError: cannot reshape array of shape \(\) \(size 1\)"),
            # The reruns meet it too: jit lowers the collapsed ref, the
            # re-indexed program indexes it.
            ("jit-eager", r"raised ValueError: Cannot lower jaxpr with verifier errors"),
            ("chain-equivalence", r"re-indexed program raised ValueError: Length of slice indices "
                                  r"must match number of operand dimensions \(\d+ vs \(\)\)"),
        ),
        trigger=_collapsing_wait,
        example=_case(ir.Ref("int16", (2,)), Wait(_AT0, ir.Int(0), decrement=False)),
        severity=CRASH),
    KnownFinding(
        "check-sem-avals-last-transform-not-indexer",
        "signal/wait on a view whose last transform is a reshape/transpose/bitcast "
        "crash in check_sem_avals (AttributeError: get_indexer_shape)",
        symptoms=(("valid-runs", NO_INDEXER_SHAPE), (_INVALID, NO_INDEXER_SHAPE)),
        trigger=_both(_SIGNAL_OR_WAIT, _last_transform_not_indexer),
        # A valid program (a cold review: an invalid one shows a crash on
        # valid code badly). Up to 0.9.0.1 a reshape to () is refused first
        # (reshape-of-ref-to-scalar-refused), so the example is bad from 0.10.
        example=_case(ir.Ref("int16", (1,)),
                      Signal(ir.View(0, (ir.Reshape(()),)), ir.Int(1))),
        severity=CRASH),
    KnownFinding(
        "semaphore-reshape-asks-for-a-numpy-dtype",
        "up to 0.9.0.1, sem.reshape(...) of a semaphore ref fails as it traces, for a valid "
        "program as for an invalid one: RefReshaper.from_ref_new_shape takes "
        "dtypes.dtype(ref.dtype), and a semaphore dtype is none of NumPy's "
        "('TypeError: Cannot determine dtype of dma_sem')",
        symptoms=(("valid-runs", r"TypeError: Cannot determine dtype of \w+"),
                  (_INVALID, r"^TypeError: Cannot determine dtype of \w+")),
        trigger=_both(_has(ir.Reshape), lambda case, k: any(
            case.refs[v.ref].is_semaphore for v in ir.views(case.statements[k]))),
        about=("semaphore", "ref", "dma"),   # a copy's semaphore is reshaped alike
        example=ir.Case((ir.Ref("dma", ()),), (
            Read(ir.View(0, (ir.Reshape((1,)), ir.At((ir.Int(0),))))),), ("abstract",))),
    KnownFinding(
        "index-into-zero-size-typeerror",
        "a static integer index into a zero-size axis of a semaphore or a ref "
        "(nothing to clamp to, so jnp raises IndexError) gets no clean error: "
        "it fails deep in lax.slice with a TypeError ('slice slice_sizes must be "
        "less than or equal to operand shape'), or, a get under jax.jit, runs "
        "and returns a value; only an eager ref's NDIndexer.from_indices_shape "
        "says 'Out of bound indexer'. (Any other out-of-bounds static index JAX "
        "clamps, as its indexing rule documents: no error is due there.)",
        symptoms=((_INVALID, r"^TypeError: slice slice_sizes must be less than or equal to operand shape"),
                  (_INVALID, r"ran without error; expected IndexError\|ValueError matching '\(\?i\)out of")),
        trigger=_indexes_zero_size,
        example=_case(ir.Ref("int16", (0,)), Signal(_AT0, ir.Int(1)),
                      expect=ir.ExpectedError("IndexError|ValueError", r"(?i)out of (bounds?|range)",
                                              "semaphore_signal")),
        severity=USABILITY),
    KnownFinding(
        "read-view-shape-unchecked",
        "semaphore_read validates nothing of its operand (its abstract eval never "
        "calls check_sem_avals, as signal's and wait's do): a view that is not "
        "()-shaped is accepted or fails later with an unrelated shape error, and "
        "a ref of a data dtype is read (read-dtype-unchecked)",
        symptoms=((_INVALID, r"^semaphore_read ran without error; expected ValueError matching 'non-"),
                  (_INVALID, r"expected ValueError matching 'non-.*from semaphore_read$")),
        trigger=_non_scalar_read,
        example=_case(ir.Ref("int16", (1,)), Read(ir.View(0, ())),
                      expect=ir.ExpectedError("ValueError", r"non-\(\)-shaped semaphore",
                                              "semaphore_read")),
        severity=USABILITY),
    KnownFinding(
        "bitcast-semaphore-unclear-error",
        "nothing rejects a bitcast of a semaphore (or of the int16 ref standing in "
        "for one) with a clear error: it fails later and elsewhere ('unexpected input: "
        "dtype=semaphore', up to 0.7.0 'Cannot interpret 'semaphore' as a data type', "
        "IndexError, a dynamic_update_slice dtype TypeError, 'cannot "
        "reshape', the second-minor bitwidth check), or a read of it is accepted",
        symptoms=((_INVALID, r"^(\w+ ran without error|ValueError: unexpected input: "
                             r"dtype=\w*semaphore|IndexError: |TypeError: (lax\.)?dynamic_update_slice|"
                             # up to 0.7.0: the semaphore dtype is taken for a NumPy one
                             r"TypeError: Cannot (interpret '\w+' as a data type|determine dtype of \w+)|"
                             r"ValueError: cannot reshape|\w+Error: .*second-minor).*expected "
                             r"NotImplementedError\|ValueError matching '\(\?i\)bitcast'"),),
        trigger=_has(ir.Bitcast),
        example=_case(ir.Ref("regular", (2,)),
                      Signal(ir.View(0, (ir.Bitcast("int16"), ir.At((ir.Int(0),)))), ir.Int(1)),
                      expect=ir.ExpectedError("NotImplementedError|ValueError", r"(?i)bitcast",
                                              "semaphore_signal")),
        severity=USABILITY),
    KnownFinding(
        "read-dtype-unchecked",
        "semaphore_read accepts a ref of any dtype (int32, float32), unlike signal and wait",
        symptoms=((_INVALID, r"^semaphore_read ran without error; expected ValueError "
                             r"matching 'semaphores of the following types'"),),
        trigger=_data_dtype_read,
        example=_case(ir.Ref("float32", ()), Read(ir.View(0, ())),
                      expect=ir.ExpectedError("ValueError", "semaphores of the following types",
                                              "semaphore_read")),
        severity=USABILITY,
        # (one fix for both: semaphore_read's abstract eval calls check_sem_avals)
        same_as="read-view-shape-unchecked"),
    KnownFinding(
        "signal-and-wait-declare-no-effects",
        "semaphore_signal and semaphore_wait declare no effects (up to 0.8.x), "
        "though their discharge rules write the semaphore: nothing tells the "
        "effect system (or dead-code elimination) that they update it",
        symptoms=(("effects", r"semaphore_(signal|wait) discharge returned a new value for "
                              r"operand \d+, which its effects \{\} do not write"),),
        trigger=_SIGNAL_OR_WAIT,
        example=_case(ir.Ref("int16", ()), Signal(ir.View(0), ir.Int(1)))),
    KnownFinding(
        "run-scoped-drops-plain-ref-updates",
        "pl.run_scoped's discharge rule (0.6.x) keeps the updates of only the "
        "closed-over refs that are pallas_core.AbstractMemoryRef (0.7.0 tests "
        "state.AbstractRef): the update of a plain ref the scope closes over "
        "(as make_jaxpr over AbstractRefs gives) is dropped, and the next "
        "memory ref takes its value: a semaphore signalled by dyn[0] inside the "
        "scope ends as int32[1], dyn's value",
        symptoms=(("abstract-concrete", r"^final r\d+ is \w+\[[\d,]*\]; abstract evaluation "
                                        r"promised"),
                  ("aval-preserved", r"^run_scoped returned a new value")),
        trigger=_plain_ref_before_in_a_scope,
        paths=("abstract",),
        example=ir.Case((ir.Ref("regular", ()), ir.Ref("regular", (), True)),
                        (Signal(ir.View(0), ir.Int(0, True)),), ("abstract",))),
    KnownFinding(
        "strided-slice-then-index-typedint",
        "state discharge fails on a read or write of any ref through a strided "
        "slice and an integer index (jax.jit(lambda x: jax.new_ref(x)[0, ::2])"
        "(jnp.ones((1, 2)))): 'Invalid type of idxer: TypedInt', from "
        "_convert_to_gather_arrays; a semaphore signal or wait through such a "
        "view (s.at[0, ::2].at[0]) and a copy's DMA semaphore view of that form "
        "fail the same way, and so, under jax.jit of jax.vmap, does a read or "
        "write of a jax.new_ref through a static integer index beside a batched "
        "one (r[0, i], i batched: a gather too)",
        # (up to 0.7.1 the index is a plain int: 'Invalid type of idxer: int')
        symptoms=(("valid-runs", r"ValueError: Invalid type of idxer: (TypedInt|int)\b"),
                  (_INVALID, r"ValueError: Invalid type of idxer: (TypedInt|int)\b"),
                  # ...and an eager program's store so, under jax.vmap and jax.jvp
                  ("vmap-stack", r"^vmap raised ValueError: Invalid type of idxer: TypedInt\b"),
                  ("grad-matches", r": ValueError: Invalid type of idxer: TypedInt\b")),
        trigger=lambda case, k: (_strided_and_int_index(case, k)
                                 or _static_beside_dynamic_int(case, k)),
        about=("semaphore", "ref", "dma"),
        # (a cold review: shown on a plain data ref, the bug's whole scope)
        example=ir.Case((ir.Ref("float32", (1, 2)),), (Swap(ir.View(0, (
            ir.At((ir.Int(0), ir.Slice(None, None, 2))),)), Iota("float32", (1,))),),
            ("jax_refs",)),
        severity=CRASH),
    KnownFinding(
        "reshaped-view-swap-rank-mismatch",
        "signal/wait through a reshape followed by an index fail in "
        "transform_swap_array ('Length of slice indices must match ...', or "
        "'Too many indices' when the index gathers): up to 0.11.1 its Reshape "
        "and Bitcast cases append the transformed value but never make it the "
        "one the next transform reads. A swap of data through x.reshape(1, 2)"
        ".at[:, :].bitcast(uint8) bitcasts the unreshaped 1-D array "
        "(IndexError: list index out of range, in state/utils.bitcast)",
        symptoms=(("valid-runs", r"ValueError: Length of slice indices must match number of operand dimensions"),
                  (_INVALID, r"ValueError: Length of slice indices must match number of operand dimensions"),
                  # With a gather after the reshape: s.at[0].reshape((1,)).at[idx].at[0]
                  ("valid-runs", r"IndexError: Too many indices: array is 0-dimensional"),
                  ("valid-runs", r"^IndexError: list index out of range$")),
        trigger=_reshape_then_more,
        example=_case(ir.Ref("int16", ()), Signal(
            ir.View(0, (ir.Reshape((1,)), ir.At((ir.Int(0),)))), ir.Int(1)))),
    KnownFinding(
        "signal-device-id-int64-under-x64",
        "under jax.enable_x64, pl.semaphore_signal(sem, 1, device_id=0) is "
        "refused with '`device_id`s must be an int32 value, but got int64': "
        "semaphore_signal casts inc to int32 but not device_id, so a Python int "
        "becomes int64 (_semaphore_signal_abstract_eval refuses it on every "
        "backend). Without x64 it traces, and the HLO interpreter then refuses "
        "the remote signal as it documents ('Remote signal not implemented', "
        "the error the snippet expects)",
        # (up to 0.8.0 the message ends "an int32 value.")
        symptoms=(("valid-runs", r"`device_id`s must be an int32 value(, but got int64|\.)"),
                  (_INVALID, r"`device_id`s must be an int32 value(, but got int64|\.)")),
        trigger=lambda case, k: case.x64 and getattr(case.statements[k], "device_id", None) is not None,
        example=ir.Case((ir.Ref("regular", ()),), (Signal(ir.View(0), ir.Int(1), device_id=ir.Int(0)),),
                        ("abstract",), x64=True,
                        expect=ir.ExpectedError("NotImplementedError", "Remote signal not implemented",
                                                "semaphore_signal")),
        severity=REFUSED),
    KnownFinding(
        "hlo-interpret-barrier-semaphore",
        "pl.pallas_call(..., interpret=True) (the HLO interpreter) cannot run a "
        "kernel that takes pltpu.get_barrier_semaphore(): lowering fails with "
        "'TypeError: No ir_type_handler for aval type: <class "
        "'jax._src.state.types.AbstractRef'>' (the barrier semaphore stays a ref "
        "after discharge) instead of running it or refusing it cleanly, as it "
        "refuses a remote signal ('Remote signal not implemented'). The TPU "
        "interpreter runs it",
        symptoms=(("valid-runs", r"TypeError: No ir_type_handler for aval type: "
                                 r"<class 'jax\._src\.state\.types\.AbstractRef'>|"
                                 # 0.6.2: the barrier semaphore's own primitive stays
                                 r"NotImplementedError: MLIR translation rule for primitive "
                                 r"'get_barrier_semaphore' not found for platform cpu"),),
        trigger=lambda case, k: any(case.refs[v.ref].collective
                                    for v in ir.views(case.statements[k])),
        example=ir.Case((ir.Ref("barrier", (), memory_space=ir.COLLECTIVE),), (
            Signal(ir.View(0), ir.Int(1)), Wait(ir.View(0), ir.Int(1))), ("pallas_call",),
            devices=2),
        paths=("pallas_call",),
        severity=USABILITY),
)
