"""Findings in real, unpatched JAX on data-ref statements that the
properties already know about (matched by `fuzz.suppressions.known_findings`)."""
from __future__ import annotations

import numpy as np

from fuzz import elements, ir
from fuzz.severity import CRASH, REFUSED, USABILITY, WRONG_VALUE
from fuzz.ops.base import KnownFinding, view_class
from fuzz.ops.ref.addupdate import AddUpdate
from fuzz.ops.ref.common import INTEGER, Iota, Mask, Scalar, negative_static_index, produced
from fuzz.ops.ref.get import Get
from fuzz.ops.ref.inspect import Inspect
from fuzz.ops.ref.masked_load import MaskedLoad, fits
from fuzz.ops.ref.masked_store import MaskedStore
from fuzz.ops.ref.swap import Swap


def _data_view_not_only_indexed(case: ir.Case, k: int) -> bool:
    """A data statement through a view with a reshape, transpose or bitcast."""
    stmt = case.statements[k]
    return stmt.family == "ref" and any(
        isinstance(t, (ir.Reshape, ir.Transpose, ir.Bitcast)) for t in stmt.view.transforms)


def _bitcast_below_2d(case: ir.Case, k: int) -> bool:
    """A view of a data ref (a data statement's, or a copy's source or
    destination) bitcasts a view of fewer than 2 dimensions."""
    stmt = case.statements[k]
    if stmt.family not in ("ref", "dma"):
        return False
    return any(isinstance(t, ir.Bitcast)
               and len(ir.view_shape(case, ir.View(view.ref, view.transforms[:n]))) < 2
               for view in ir.views(stmt) if not case.refs[view.ref].is_semaphore
               for n, t in enumerate(view.transforms))


def _integer_value_of_another_dtype(case: ir.Case, k: int) -> bool:
    """A store of an integer array into an integer ref of another dtype."""
    stmt = case.statements[k]
    value = getattr(stmt, "value", None)
    if isinstance(value, Iota):
        got = value.dtype
    elif isinstance(value, ir.Result):
        got = produced(case, value.stmt)[1]
    else:
        return False
    kind = ir.view_dtype(case, stmt.view)
    return got != kind and got in INTEGER and kind in INTEGER


def _addupdate_of_python_scalar(case: ir.Case, k: int) -> bool:
    stmt = case.statements[k]
    return isinstance(stmt, AddUpdate) and isinstance(stmt.value, Scalar)


def _addupdate_gathering_bools(case: ir.Case, k: int) -> bool:
    """An addupdate on a bool ref through an integer-array index or a strided
    slice (both discharge to a scatter-add), or a dynamic index (a scatter-add
    once vmap batches it)."""
    stmt = case.statements[k]
    return (isinstance(stmt, AddUpdate) and case.refs[stmt.view.ref].kind == "bool"
            and any(isinstance(i, ir.IntArray) or isinstance(i, ir.Slice) and (i.step or 1) > 1
                    or isinstance(i, (ir.Int, ir.Ds)) and ir.walk(i, ir.Int) and any(
                        j.dynamic for j in ir.walk(i, ir.Int))
                    for t in stmt.view.transforms if isinstance(t, ir.At) for i in t.indices))


def _addupdate_after_scalar_store(case: ir.Case, k: int) -> bool:
    """An addupdate on a ref an earlier statement set from a Python scalar."""
    stmt = case.statements[k]
    return isinstance(stmt, AddUpdate) and any(
        isinstance(s, Swap) and isinstance(s.value, Scalar) and s.view.ref == stmt.view.ref
        for s in case.statements[:k])


def _negative_static_index(case: ir.Case, k: int) -> bool:
    return negative_static_index(case.statements[k])


def _masked_negative_static_index(case: ir.Case, k: int) -> bool:
    """A masked load or store through a negative static index, or a
    statement using what such a load gave (where its wrong value shows)."""
    if isinstance(case.statements[k], (MaskedLoad, MaskedStore)):
        return _negative_static_index(case, k)
    return any(r.stmt < k and _masked_negative_static_index(case, r.stmt)
               for r in ir.walk(case.statements[k], ir.Result))


def _swap_of_python_bool(case: ir.Case, k: int) -> bool:
    stmt = case.statements[k]
    return isinstance(stmt, Swap) and isinstance(stmt.value, Scalar) and isinstance(
        stmt.value.value, bool)


def _static_int_last(stmt) -> bool:
    chain = stmt.view.transforms if isinstance(stmt, (MaskedLoad, MaskedStore)) else ()
    return bool(chain) and isinstance(chain[-1], ir.At) and any(
        isinstance(i, ir.Int) and not i.dynamic for i in chain[-1].indices)


# A static int index of a masked op, as each release keeps it (0.7.1 a plain int).
_NO_SHAPE = r"AttributeError: '(TypedInt|int)' object has no attribute 'shape'"


def _masked_static_int_index(case: ir.Case, k: int) -> bool:
    """A masked load or store whose last indexer has a static int, in the case
    or in the one-static-index rewrite chain-equivalence runs (`elements.canonical`)."""
    return _static_int_last(case.statements[k]) or (
        isinstance(case.statements[k], (MaskedLoad, MaskedStore))
        and (rewritten := elements.canonical(case)) is not None
        and _static_int_last(rewritten.statements[k]))


def _masked_store_through_transforms(case: ir.Case, k: int) -> bool:
    """A masked store through a view with a transform before its last indexer
    (or a view that does not end in one)."""
    stmt = case.statements[k]
    if not isinstance(stmt, MaskedStore):
        return False
    chain = stmt.view.transforms
    return bool(chain[:-1] if chain and isinstance(chain[-1], ir.At) else chain)


def _masked_store_last_axis_1(case: ir.Case, k: int) -> bool:
    """A masked store (with a mask) of a view whose first axis is longer
    than its last ((2, 1), (4, 3), (4, 1, 1, 3); not (2, 2), (2, 4, 3))."""
    stmt = case.statements[k]
    if not (isinstance(stmt, MaskedStore) and stmt.mask is not None):
        return False
    shape = ir.view_shape(case, stmt.view)
    return len(shape) >= 2 and shape[0] > shape[-1]


def _masked_store_of_python_scalar(case: ir.Case, k: int) -> bool:
    """pltpu.store of a Python scalar into a ref of other than its default
    dtype (64-bit under x64)."""
    stmt = case.statements[k]
    defaults = ("int64", "float64", "bool") if case.x64 else ("int32", "float32", "bool")
    return (isinstance(stmt, MaskedStore) and isinstance(stmt.value, Scalar)
            and ir.view_dtype(case, stmt.view) not in defaults)


def _writes(case: ir.Case, k: int) -> bool:
    return isinstance(case.statements[k], (Swap, AddUpdate, MaskedStore))


def _ellipsis_between_advanced_indices(case: ir.Case, k: int) -> bool:
    """An indexer with an integer array, and an ``...`` between two of its
    integer or integer-array indices."""
    stmt = case.statements[k]
    for t in getattr(getattr(stmt, "view", None), "transforms", ()):
        if not isinstance(t, ir.At) or not any(isinstance(i, ir.IntArray) for i in t.indices):
            continue
        advanced = [n for n, i in enumerate(t.indices) if isinstance(i, (ir.Int, ir.IntArray))]
        if any(isinstance(i, ir.Ellipsis_) and advanced[0] < n < advanced[-1]
               for n, i in enumerate(t.indices)):
            return True
    return False


def _masked_store_with_dynamic_index_under_x64(case: ir.Case, k: int) -> bool:
    stmt = case.statements[k]
    return case.x64 and isinstance(stmt, MaskedStore) and any(
        i.dynamic for t in stmt.view.transforms if isinstance(t, ir.At) for i in ir.walk(t, ir.Int))


def _through_a_transformed_ref(case: ir.Case, k: int) -> bool:
    """A data statement on a view that is a transformed ref before its last
    indexer (``x.at[:][i]``)."""
    stmt = case.statements[k]
    chain = stmt.view.transforms if stmt.family == "ref" else ()
    return len(chain[:-1] if chain and isinstance(chain[-1], ir.At) else chain) > 0


def _dynamic_index_broadcast(case: ir.Case, k: int) -> bool:
    """A view of statement k indexed by integers (`Int`, `IntArray`) of
    which a traced one (read from ``dyn``) has not the shape they broadcast
    to: NDIndexer broadcasts it with state's broadcast_to primitive."""
    for view in ir.views(case.statements[k]):
        for t in view.transforms:
            if not isinstance(t, ir.At):
                continue
            ints = [i for i in t.indices if isinstance(i, (ir.Int, ir.IntArray))]
            shapes = [np.shape(ir.index_key(i)) for i in ints]
            try:
                wanted = np.broadcast_shapes(*shapes)
            except ValueError:   # (an invalid program's mistake)
                continue
            if any(i.dynamic and s != wanted for i, s in zip(ints, shapes)):
                return True
    return False


def _ds_with_dynamic_start(case: ir.Case, k: int) -> bool:
    return any(isinstance(d, ir.Ds) and d.start.dynamic for d in ir.walk(case.statements[k], ir.Ds))


def _masked_load_mask_broadcasts(case: ir.Case, k: int) -> bool | None:
    """Whether statement k's mask, a masked load's, broadcasts with the
    view's shape; None if it is no masked load with a mask."""
    stmt = case.statements[k]
    if not isinstance(stmt, MaskedLoad) or stmt.mask is None:
        return None
    try:
        np.broadcast_shapes(ir.view_shape(case, stmt.view), stmt.mask.shape)
    except ValueError:
        return False
    return True


def _masked_load_mask_wider(case: ir.Case, k: int) -> bool:
    """A masked load whose mask broadcasts with the view's shape, not to it."""
    return bool(_masked_load_mask_broadcasts(case, k)) and not fits(
        case.statements[k].mask, ir.view_shape(case, case.statements[k].view))


def _masked_load_mask_unbroadcastable(case: ir.Case, k: int) -> bool:
    """A masked load whose mask does not broadcast with the view's shape."""
    return _masked_load_mask_broadcasts(case, k) is False


def _masked_store_mask_of_another_shape(case: ir.Case, k: int) -> bool:
    stmt = case.statements[k]
    return (isinstance(stmt, MaskedStore) and stmt.mask is not None
            and stmt.mask.shape != ir.view_shape(case, stmt.view))


# What a later statement meets when a ref's value has the wrong shape.
_WRONG_SHAPE_DOWNSTREAM = (
    r"((TypeError|ValueError): (broadcast_in_dim (broadcast_dimensions must have length|"
    r"operand dimension sizes must either be 1)|length of padding_config must equal|"
    r"slice (slice_sizes|limit_indices) must be less than or equal to operand shape|"
    r"slice start_indices must have length equal|Length of slice indices must match|"
    r"Cannot broadcast to shape with fewer dimensions|lax\.dynamic_update_slice|"
    r"dynamic_update_slice update|Cannot lower jaxpr with verifier errors|"
    # ...as a loop's carry, of another shape from one iteration to the next
    r"while_loop body function carry input and carry output must have equal types|"
    # ...as an addupdate's sum with a value of the ref's own shape
    r"add got incompatible shapes for broadcasting)|"
    r"IndexError: (Too many indices: array is \d+-dimensional|list index out of range))")

# Index operands of mixed widths (the order follows the view's axes).
_INT64_BESIDE_INT32 = (r"TypeError: index arguments to dynamic_slice must be integers of the "
                       r"same type, got: (int(32|64), )*(int64, (int(32|64), )*int32|int32, "
                       r"(int(32|64), )*int64)")

def _indexes_a_zero_size_dimension(case: ir.Case, k: int) -> bool:
    """Statement k indexes (``.at[...]``) a view with a zero-size dimension,
    or passes one a row of a ref that has one (a scan's or function's
    ``xs``)."""
    stmt = case.statements[k]
    return any(0 in case.refs[r].shape[1:] for r in stmt.slices()) or any(
        isinstance(t, ir.At) and 0 in ir.view_shape(case, ir.View(view.ref, view.transforms[:n]))
        for view in ir.views(stmt) for n, t in enumerate(view.transforms))


def _reshaped_to_scalar(case, k) -> bool:
    return any(isinstance(t, ir.Reshape) and t.shape == ()
               for v in ir.views(case.statements[k]) for t in v.transforms)


def _writes_lost(entry_id: str, path: str, description: str) -> KnownFinding:
    """A path that drops a kernel's writes to its refs: the final contents are
    the initial ones."""
    return KnownFinding(
        entry_id, description,
        symptoms=(("model-vs-path", r"^final r\d+\[[\d, ]*\] is .*, expected "),
                  ("path-vs-path", r"^final r\d+ differs between")),
        trigger=_writes,
        example=ir.Case((ir.Ref("int32", (2,)),), (Swap(ir.View(0), Iota("int32", (2,), 5)),),
                        paths=(path,)),
        paths=(path,))


KNOWN_FINDINGS: tuple[KnownFinding, ...] = (
    KnownFinding(
        "reshape-of-ref-to-scalar-refused",
        "a ref of one element reshaped to () (x.reshape(())) is refused at "
        "trace time up to 0.9.0: 'Cannot reshape ref to empty shape', though "
        "NumPy's reshape (and JAX's from 0.9.1) takes it",
        symptoms=(("valid-runs", r"ValueError: Cannot reshape ref to empty shape"),
                  # ...before an invalid program's own error
                  ("invalid-rejected", r"^ValueError: Cannot reshape ref to empty shape")),
        trigger=_reshaped_to_scalar,
        about=("semaphore", "ref", "dma"),   # (a copy's semaphore view too)
        example=ir.Case((ir.Ref("int32", (1,)),), (
            Swap(ir.View(0, (ir.Reshape(()),)), Iota("int32", ())),),
            ("abstract", "run_state", "pallas_call"))),
    KnownFinding(
        "addupdate-after-scalar-store-numpy-dtype",
        "under jax.jit a bool jax.new_ref r with r[...] = False and two "
        "jax.ref.addupdate(r, ..., True) ends as int32 2 (eagerly: True), and "
        "q[i] = r[...] then fails with TypeError: lax.dynamic_update_slice "
        "requires arguments to have the same dtypes. After x[...] = <a Python "
        "scalar> (or of a constant array: jnp.asarray(False) too, a literal of "
        "the jaxpr), discharge holds x's value as that literal, and "
        "_addupdate_discharge adds to it in NumPy/Python arithmetic (x + val): inside "
        "discharge the new value of an int32 ref is int64, of a float32 ref "
        "float64 (cast back by the end, on 0.12), of a bool ref an int or a "
        "Python scalar (which later statements cannot even index)",
        symptoms=(("model-vs-path", r"^final r\d+\[[\d, ]*\] is -?\d+, expected (True|False)\b"),
                  ("aval-preserved", r"^addupdate returned a new value (int64|float64|int32|"
                                     r"python \w+)\[\] for operand 0"),
                  ("valid-runs", r"AttributeError: '(int|bool|float)' object has no attribute 'shape'"),
                  # ...once the store in a branch is unrolled to the top level
                  # (a cond's discharge turns the scalar into an array).
                  ("control-unrolled", r"^the unrolled program raised (AttributeError: '(int|bool|"
                                       r"float)' object has no attribute 'shape'|TypeError: "
                                       r"lax\.dynamic_update_slice requires arguments to have "
                                       r"the same dtypes)")),
        consequences=(
            ("abstract-concrete", r"^final r\d+ is (int64|float64|int32|python \w+)\[\]"),
            ("chain-equivalence", r"re-indexed program raised TypeError: lax\.dynamic_update_slice "
                                  r"requires arguments to have the same dtypes"),
            # The value of the wrong dtype flows on: out of an inner jit,
            # into pallas_call's write-back, into jit's lowering.
            ("aval-preserved", r"^(jit|remat2) returned a new value (int64|float64|int32)\[\] "
                               r"for operand"),
            ("valid-runs", r"TypeError: lax\.dynamic_update_slice requires arguments to have the "
                           r"same dtypes"),
            ("jit-eager", r"raised ValueError: Cannot lower jaxpr with verifier errors"),
            # ...and a jitted path's final value differs from an eager one's.
            ("path-vs-path", r"^final r\d+ differs between")),
        trigger=_addupdate_after_scalar_store,
        # Public: jax.new_ref under jax.jit (jax_refs) ends with 2, not True.
        example=ir.Case((ir.Ref("bool", ()),), (Swap(ir.View(0), Scalar(False)),
                                                AddUpdate(ir.View(0), Scalar(True)),
                                                AddUpdate(ir.View(0), Scalar(True))),
                        # (jax.new_ref under jax.jit shows the wrong value;
                        # run_state, the rule's output from 0.7.2 on)
                        paths=("jax_refs", "run_state")),
        severity=WRONG_VALUE),
    KnownFinding(
        "tpu-interpret-negative-static-index",
        "the TPU interpreter fails an assertion (0 <= r in "
        "is_range_out_of_bounds_for_shape) on a load or store with a negative "
        "static index (x[:, -1] = v): it does not normalize the index, the HLO "
        "interpreter does",
        symptoms=(("valid-runs", r"CpuCallback error calling callback: AssertionError"),),
        trigger=_negative_static_index,
        example=ir.Case((ir.Ref("int32", (1, 2)),), (Swap(ir.View(0, (
            ir.At((ir.Slice(), ir.Int(-1))),)), Iota("int32", (1,))),), ("tpu_interpret",)),
        severity=CRASH),
    KnownFinding(
        "addupdate-bool-ref-gather",
        "addupdate on a bool ref works through a scalar or unit-stride slice "
        "index (as a logical or) but fails through an integer-array index or a "
        "strided slice, or under vmap through a dynamic index: the scatter-add "
        "it discharges (or batches) to calls lax.add, which refuses bool ('add "
        "does not accept dtype bool'). jnp's own .at[idx].add refuses bool so too, "
        "so the refusal is JAX's rule; what is wrong is that it is inconsistent "
        "and unclear",
        symptoms=(("valid-runs", r"TypeError: add does not accept dtype bool"),
                  # ...and in invalid programs, before their own mistake is reached.
                  ("invalid-rejected", r"^TypeError: add does not accept dtype bool"),
                  ("vmap-stack", r"^vmap raised TypeError: add does not accept dtype bool")),
        trigger=_addupdate_gathering_bools,
        example=ir.Case((ir.Ref("bool", (2,)),), (AddUpdate(
            ir.View(0, (ir.At((ir.IntArray((1,), True),)),)), Iota("bool", (1,), 1)),),
            paths=("abstract",)),
        severity=USABILITY),
    KnownFinding(
        "swap-python-bool-kept-raw",
        "x[...] = False on a bool ref: the Python bool is never made an array "
        "(_maybe_implicit_cast converts only ints and floats), so swap's "
        "discharge rule returns the raw Python bool as the ref's new value, and "
        "pl.run_state returns a Python bool where a bool[] array belongs",
        symptoms=(("aval-preserved", r"^swap returned a new value python bool\[\] for operand"),),
        consequences=(
            ("abstract-concrete", r"^final r\d+ is python bool\[\]"),
            # Later statements on the ref see the raw bool: an addupdate adds
            # to it as Python does (False + False is the int 0), or fails.
            ("aval-preserved", r"^addupdate returned a new value python int\[\]"),
            # (debug_callback's and debug_print's rules return their operands as they are)
            ("aval-preserved", r"^(jit|remat2|debug_callback|debug_print) returned a new value "
                               r"(python \w+|int32|bool)\[\] for operand"),
            ("valid-runs", r"AttributeError: 'bool' object has no attribute '(shape|dtype)'"),
            # a copy from the ref subscripts the bool (30-minute campaign, seed 13)
            ("valid-runs", r"TypeError: 'bool' object is not subscriptable"),
            ("chain-equivalence", r"re-indexed program raised AttributeError: 'bool' object has "
                                  r"no attribute '(shape|dtype)'"),
            ("partial-discharge", r"Expected aliased input \d+ at index"),
            ("chain-equivalence", r"re-indexed program raised TypeError: lax\.dynamic_update_slice "
                                  r"requires arguments to have the same dtypes, got bool, int32")),
        trigger=_swap_of_python_bool,
        example=ir.Case((ir.Ref("bool", ()),), (Swap(ir.View(0), Scalar(False)),)),
        severity=WRONG_VALUE,
        # The raw bool is what the addupdate after it adds to: one root, filed
        # where it shows worst (a maintainer's review: merge the two).
        same_as="addupdate-after-scalar-store-numpy-dtype"),
    KnownFinding(
        "addupdate-python-scalar-not-converted",
        "jax.ref.addupdate does not convert a Python scalar to the ref's dtype, "
        "as swap (x[idx] = 1) does: an int into an int8 ref, or a float into a "
        "bfloat16 ref, is refused with 'Invalid dtype for `addupdate`. ... Value "
        "shape: int32' (the message says shape for a dtype), and a Python bool "
        "fails with AttributeError: 'bool' object has no attribute 'shape'",
        symptoms=(("valid-runs", r"ValueError: Invalid dtype for `addupdate`\. Ref dtype: \w+\. "
                                 r"Value shape: (int32|float32|int64|float64)"),
                  ("valid-runs", r"AttributeError: 'bool' object has no attribute 'shape'"),
                  # ...and in invalid programs, before their own mistake is reached.
                  ("invalid-rejected", r"^ValueError: Invalid dtype for `addupdate`\. Ref dtype: \w+\. "
                                       r"Value shape: (int32|float32|int64|float64)"),
                  ("invalid-rejected", r"^AttributeError: 'bool' object has no attribute 'shape'")),
        trigger=_addupdate_of_python_scalar,
        example=ir.Case((ir.Ref("int8", ()),), (AddUpdate(ir.View(0), Scalar(1)),),
                        paths=("abstract",)),
        severity=REFUSED,
        # (a cold review: one missing _maybe_implicit_cast, in two callers)
        same_as="masked-store-python-scalar-not-converted"),
    KnownFinding(
        "tpu-interpret-addupdate",
        "the TPU interpreter cannot run addupdate on a kernel ref, and says so "
        "unclearly: it binds the primitive on its own stand-in for the ref, whose "
        "abstract evaluation refuses it ('`addupdate` must be called on `Ref` "
        "types: int16[]'). Mosaic has no addupdate lowering either, so the "
        "interpreter should refuse it as unsupported on TPU",
        symptoms=(("valid-runs", r"ValueError: `addupdate` must be called on `Ref` types"),),
        trigger=lambda case, k: isinstance(case.statements[k], AddUpdate),
        example=ir.Case((ir.Ref("int32", (2,)),),
                        (AddUpdate(ir.View(0), Iota("int32", (2,))),), paths=("tpu_interpret",)),
        paths=("tpu_interpret", "tpu_interpret_eager"),
        severity=USABILITY),
    KnownFinding(
        "swap-casts-integer-value-of-another-dtype",
        "storing an integer array into a ref of another integer dtype "
        "(x[...] = int32 array, x an int8 or int16 ref) is accepted and silently cast "
        "(wrapping), while a float of another dtype is refused ('Invalid dtype "
        "for `swap`'): _maybe_implicit_cast's condition is "
        "`weak and (float, float) or (int, int)`, so the weak-type check "
        "covers only floats",
        symptoms=(("invalid-rejected", r"^swap ran without error; expected ValueError "
                                       r"matching 'Invalid dtype for `swap`'"),),
        trigger=_integer_value_of_another_dtype,
        # (70000 wraps in int8 and int16 alike, which the minimizer may pick)
        example=ir.Case((ir.Ref("int8", ()),), (Swap(ir.View(0), Iota("int32", (), 70000)),),
                        expect=ir.ExpectedError("ValueError", "Invalid dtype for `swap`", "swap")),
        severity=USABILITY),
    KnownFinding(
        "tpu-interpret-reshaped-data-ref",
        "the TPU interpreter crashes on a get or swap through a reshaped (or "
        "transposed, or bitcast) data ref view: interpret utils' to_range assumes every "
        "transform is an indexer (AttributeError: 'ReshapeTransform' object "
        "has no attribute 'indices'), where discharge handles the view; a "
        "make_async_copy through such a view fails the same way",
        symptoms=(("valid-runs", r"CpuCallback error calling callback: AttributeError: "
                                 rf"'{view_class('Reshape', 'Transpose', 'Bitcast')}' object has no "
                                 r"attribute 'indices'"),),
        trigger=_data_view_not_only_indexed,
        example=ir.Case((ir.Ref("int32", (2, 2)),),
                        (Swap(ir.View(0, (ir.Reshape((4,)),)), Iota("int32", (4,))),),
                        paths=("tpu_interpret",)),
        severity=CRASH),
    KnownFinding(
        "tpu-interpret-masked-store-last-axis-1",
        "the TPU interpreter fails on pltpu.store(x, v, mask=m) into a ref whose "
        "first axis is longer than its last (shape (2, 1), (4, 3), (5, 4), "
        "(4, 1, 1, 3), in VMEM or SMEM): 'Out-of-bounds masked swap of (0 0 vmem "
        "N): swapping [()] but buffer has shape (2, 1)' (interpret_pallas_call.py, "
        "swap), for int32, uint32 and float32 alike; the same store without a "
        "mask, of shape (2, 2), (1, 4), (2, 4, 3) or (8, 128), and interpret=True "
        "run (30-minute campaign, seed 13; widened from last-axis-1 shapes by a "
        "60 s campaign, seed 3). A cold review found the cause: the in-bounds mask "
        "of swap_buffer_content (jax/_src/pallas/mosaic/interpret/shared_memory.py) "
        "clears in_bounds_mask[in_bounds_shape[i]:] along axis 0 for every axis i",
        symptoms=(("valid-runs", r"CpuCallback error calling callback: ValueError: Out-of-bounds "
                                 # (up to 0.7.2 the whole block's slices, not [()])
                                 r"masked swap of .*: swapping \[(\(\)|\(slice\(.*\))\] but buffer "
                                 r"has shape"),),
        trigger=_masked_store_last_axis_1,
        example=ir.Case((ir.Ref("int32", (2, 1)),), (MaskedStore(
            ir.View(0), Iota("int32", (2, 1)), Mask((2, 1))),), paths=("tpu_interpret",)),
        paths=("tpu_interpret", "tpu_interpret_eager"),
        severity=CRASH),
    KnownFinding(
        "ref-index-of-a-zero-size-dimension",
        "indexing a ref with a zero-size dimension fails: r = "
        "jax.new_ref(jnp.zeros((3, 0))); r[2] (or r.at[2], r[0:1], r.at[:, 1] of "
        "a (0, 3) ref) raises 'ValueError: Out of bound slice: start=0, dim=0', "
        "eagerly, under jax.jit and in Pallas kernels alike, though the index "
        "is in bounds and jnp.zeros((3, 0))[2] has shape (0,); r[...] runs. A "
        "regression in 0.12.0: NDIndexer.__post_init__ (jax/_src/state/indexing.py) "
        "used to check `start >= dim` under `if value := _maybe_concretize(start):`, "
        "which a start of 0 skipped, and now under `is not None`, so the implicit "
        "full slice Slice(0, 0) of an axis of length 0 fails `0 >= 0`. An empty "
        "slice starting at dim is in bounds",
        symptoms=(("valid-runs", r"ValueError: Out of bound slice: start=0, dim=0"),),
        trigger=_indexes_a_zero_size_dimension,
        about=("ref", "semaphore", "control"),   # (a view a scan or function is passed)
        example=ir.Case((ir.Ref("int16", (3, 0)),), (Get(ir.View(0, (ir.At((ir.Int(2),)),))),),
                        ("jax_refs",)),
        severity=CRASH),
    KnownFinding(
        "masked-ops-static-int-index",
        "pltpu.load(x.at[0]) and pltpu.store(x.at[0], v) crash in discharge with "
        "AttributeError: 'TypedInt' object has no attribute 'shape': "
        "_load_discharge_rule and _swap_discharge_rule test `not s.shape` on each "
        "index, and a static Python int index has none (x.at[pl.ds(0, 1)] and "
        "a traced index work). 0.7.1 keeps the index a plain int: 'int' object "
        "has no attribute 'shape', on the same line",
        symptoms=(("valid-runs", _NO_SHAPE),
                  ("invalid-rejected", "^" + _NO_SHAPE),
                  ("partial-discharge", "raised " + _NO_SHAPE),
                  ("chain-equivalence", "re-indexed program raised " + _NO_SHAPE)),
        trigger=_masked_static_int_index,
        example=ir.Case((ir.Ref("int32", (2,)),), (MaskedLoad(ir.View(0, (
            ir.At((ir.Int(0),)),))),), paths=("abstract",)),
        severity=CRASH),
    KnownFinding(
        "masked-ops-negative-static-index",
        "0.7.2 to 0.10.0: pltpu.store(x.at[-1], v) stores nothing, and "
        "pltpu.load(x.at[-1]) gives the out-of-bounds fill (-2147483648 for "
        "int32): the masked ops' discharge takes a negative static index as "
        "it is, past the start, where x[-1] counts from the end. A silent "
        "wrong value; from 0.10.1 a static index fails as masked-ops-static-int-index",
        symptoms=(("model-vs-path", r"^final r\d+(\[[\d, ]*\])? is .*, expected "),
                  ("path-vs-path", r"^final r\d+ differs between "),
                  ("chain-equivalence", r"^results differ when every view is one static index$")),
        trigger=_masked_negative_static_index,
        example=ir.Case((ir.Ref("int32", (2,)),), (MaskedStore(ir.View(0, (
            ir.At((ir.Int(-1),)),)), Iota("int32", (), 5)),), paths=("run_state",))),
    KnownFinding(
        "masked-swap-returns-transformed-ref",
        "pltpu.store through a view with a transform before its last indexer "
        "(x.reshape(2, 2), x.at[1:3].at[0]) discharges to the *transformed* "
        "array as the ref's new value: _swap_discharge_rule (pallas/primitives.py) "
        "applies the earlier "
        "transforms with transform_array and never puts the result back, so "
        "pl.run_state returns an array of the view's shape (f32[2,2] for an "
        "f32[4] ref), or dtype (u8 through x.bitcast(uint8) of an i8 ref), "
        "or the ref's values in the view's order",
        symptoms=(("aval-preserved", r"^masked_swap returned a new value \S+ for operand \d+"),
                  ("abstract-concrete", r"^final r\d+ is \w+\[[\d,]*\]; abstract evaluation promised"),
                  ("model-vs-path", r"^final r\d+(\[[\d, ]*\] is .*, expected | has shape)")),
        # The wrong-shaped value flows on into whatever uses the ref next.
        consequences=(
            ("aval-preserved", r"returned a new value \S+ for operand \d+, a ref of"),
            ("valid-runs", _WRONG_SHAPE_DOWNSTREAM),
            # ...or a scan storing a 0-D value back into its 1-D slice
            # (lax.dynamic_update_index_in_dim asserts the ranks).
            ("valid-runs", r"^AssertionError: $"),
            ("model-vs-path", r"^final r\d+\[[\d, ]*\] is .*, expected "),
            # ...and into an invalid program's own mistake, after it.
            ("invalid-rejected", _WRONG_SHAPE_DOWNSTREAM),
            ("partial-discharge", r"Unable to replace an Array with an Array of different "
                                  r"(shape|dtype)|"
                                  r"Expected aliased input \d+ at index|"
                                  r"Cannot lower jaxpr with verifier errors|"
                                  # ...as a loop's carry, once the loop is discharged.
                                  r"while_loop body function carry input and carry output "
                                  r"must have equal types"),
            ("jit-eager", r"Cannot lower jaxpr with verifier errors"),
            # ...and under jax.jvp of the run_state program, or, where a later
            # statement casts the wrong dtype back, a wrong derivative.
            ("grad-matches", r"derivatives of .*: ValueError: Cannot lower jaxpr with verifier "
                             r"errors|^(fwd|rev) derivatives of .*: AssertionError: Not equal "
                             r"to tolerance"),
            ("control-unrolled", r"^results differ when every loop and cond is unrolled"),
            # ...unrolled, the wrong-shaped value meets the ref's next use
            # (the README's main job, a clean clone, this stop).
            ("control-unrolled", r"^the unrolled program raised (ValueError: Incompatible shapes "
                                 r"for broadcasting|" + _WRONG_SHAPE_DOWNSTREAM + ")"),
            ("path-vs-path", r"^final r\d+ differs between"),
            # Re-indexed as one static index, the store no longer goes wrong.
            ("chain-equivalence", r"^results differ when every view is one static index")),
        trigger=_masked_store_through_transforms,
        example=ir.Case((ir.Ref("int32", (4,)),), (MaskedStore(
            ir.View(0, (ir.Reshape((2, 2)),)), Iota("int32", (2, 2))),), paths=("abstract",)),
        severity=WRONG_VALUE),
    KnownFinding(
        "masked-store-python-scalar-not-converted",
        "pltpu.store(x, 1) into an int8 (uint8, float16, ...) ref is refused "
        "with 'Invalid dtype for `swap`. Ref dtype: int8. Value dtype: int32', "
        "though pltpu.store documents the semantics of x[...] = 1, which "
        "converts a Python scalar (any weakly typed value: jnp.full(shape, 1) "
        "too) to the ref's dtype: swap (jax/_src/pallas/primitives.py), which "
        "pltpu.store calls, binds swap_p on the raw value, where x[...] = 1 "
        "goes through state/primitives.py's ref_swap, the one caller of that "
        "cast; jax.ref.addupdate(x, ..., 1) skips the same cast "
        "(addupdate-python-scalar-not-converted)",
        symptoms=(("valid-runs", r"ValueError: Invalid dtype for `swap`\. Ref dtype: \w+\. "
                                 r"Value dtype: (int32|float32|int64|float64|bool)"),
                  ("invalid-rejected", r"^ValueError: Invalid dtype for `swap`\. Ref dtype: "
                                       r"\w+\. Value dtype: (int32|float32|int64|float64|bool)")),
        trigger=_masked_store_of_python_scalar,
        example=ir.Case((ir.Ref("int8", ()),), (MaskedStore(ir.View(0), Scalar(1)),),
                        paths=("abstract",)),
        severity=REFUSED),
    KnownFinding(
        "masked-swap-mask-shape-unchecked",
        "pltpu.store with a mask of another shape than the value traces without "
        "error: masked_swap's abstract evaluation never looks at the mask "
        "(masked_load's checks only that it broadcasts together with the "
        "loaded shape, so pltpu.load takes a wider mask: "
        "masked-load-mask-broadcasts-both-ways), though Mosaic refuses it "
        "('Expected value and mask to have the same shape'). Interpret mode "
        "then broadcasts the mask, or fails in jnp.where ('Incompatible shapes "
        "for broadcasting'); the TPU interpreter fails an assertion",
        symptoms=(("invalid-rejected", r"^masked_swap ran without error"),
                  ("invalid-rejected", r"Incompatible shapes for broadcasting"),
                  ("invalid-rejected", r"CpuCallback error calling callback: AssertionError"),
                  ("invalid-rejected", r"TypeError: dynamic_update_slice update (shape must be "
                                       r"smaller than|must have the same rank as) operand")),
        trigger=_masked_store_mask_of_another_shape,
        example=ir.Case((ir.Ref("int32", (2,)),), (MaskedStore(
            ir.View(0), Iota("int32", (2,)), Mask((3,))),), paths=("abstract",),
            expect=ir.ExpectedError("ValueError", r"(?i)mask", "masked_swap")),
        severity=USABILITY),
    KnownFinding(
        "masked-load-mask-broadcasts-both-ways",
        "pltpu.load(x, mask=m) with x of shape (1,) and m of shape (2,) traces: "
        "masked_load's abstract evaluation checks that the mask and the loaded "
        "shape broadcast together (jnp.broadcast_shapes), not that the mask "
        "broadcasts to the loaded shape. The value is promised as (1,); "
        "discharge's jnp.where(mask, out, other) makes it (2,)",
        symptoms=(("invalid-rejected", r"^masked_load ran without error"),),
        trigger=_masked_load_mask_wider,
        example=ir.Case((ir.Ref("int32", (1,)),), (MaskedLoad(ir.View(0), Mask((2,))),),
                        paths=("abstract",),
                        expect=ir.ExpectedError("ValueError", r"(?i)mask", "masked_load")),
        severity=USABILITY,
        # (a cold review: one check of the mask's shape missing from
        # pltpu.load and pltpu.store alike)
        same_as="masked-swap-mask-shape-unchecked"),
    KnownFinding(
        "masked-load-mask-unchecked",
        "0.7.1 to 0.9.0.1: pltpu.load(x, mask=m) traces whatever m's shape: "
        "masked_load's abstract evaluation looks at no mask, and with no other= "
        "its discharge drops it, so x of shape (3, 4, 3) loads in full under a "
        "mask of shape (4,); from 0.9.1 it is refused ('ValueError: Cannot "
        "broadcast mask shape (4,) to load shape (3, 4, 3)')",
        symptoms=(("invalid-rejected", r"^masked_load ran without error"),),
        trigger=_masked_load_mask_unbroadcastable,
        example=ir.Case((ir.Ref("int32", (3, 4, 3)),), (MaskedLoad(ir.View(0), Mask((4,))),),
                        paths=("abstract",),
                        expect=ir.ExpectedError("ValueError", r"(?i)mask", "masked_load"))),
    _writes_lost(
        "pallas-call-closed-over-ref-writes-lost", "nested",
        "JAX 0.10: a pallas_call(interpret=True) kernel that closes over a "
        "jax.new_ref under jax.jit drops every write to it (r[0] = 7 in the "
        "kernel leaves r as it was); pl.run_state closing over the same ref "
        "keeps them. Fixed by JAX 0.12"),
    _writes_lost(
        "mesh-kernel-writes-lost", "mesh_kernel",
        "JAX 0.11.0 and 0.11.1: a kernel run by pl.kernel over a pltpu.TensorCoreMesh "
        "(discharged by the mpmd_map rule) drops every write to its refs (r[...] "
        "= 5 in the kernel leaves r as it was); pl.pallas_call runs the same "
        "kernel right. Fixed in 0.11.2"),
    KnownFinding(
        "ref-index-ellipsis-between-advanced-indices",
        "indexing a ref with an int and an index array separated by an Ellipsis "
        "that stands for no axes (x[:, 0, ..., idx] on a (1, 1, 1) ref, idx an "
        "int array of 3) puts the indexed axis where NumPy and jnp do not: "
        "NDIndexer.from_indices_shape (jax/_src/state/indexing.py) expands the "
        "Ellipsis to nothing before it asks whether the int and the array are "
        "adjacent, so the ref's get gives shape (1, 3) where NumPy and jnp, "
        "which take them as not adjacent, give (3, 1)",
        symptoms=(("abstract-concrete", r"^the value of \w+ is \w+\[[\d,]*\]; NumPy's "
                                        r"arr\[idx\] of the same view is"),
                  # A store of a value of NumPy's shape is refused.
                  ("valid-runs", r"ValueError: Invalid shape for `(addupdate|swap)`\. Ref shape: "),
                  ("invalid-rejected", r"^ValueError: Invalid shape for `(addupdate|swap)`\. Ref "
                                       r"shape: ")),
        trigger=_ellipsis_between_advanced_indices,
        example=ir.Case((ir.Ref("int32", (1, 1, 1)),), (Get(ir.View(0, (ir.At((
            ir.Slice(), ir.Int(0), ir.Ellipsis_(), ir.IntArray((0, 0, 0), True))),))),),
            paths=("abstract",)),
        severity=WRONG_VALUE),
    KnownFinding(
        "addupdate-through-reshape-attributeerror",
        "JAX 0.8 to 0.11.1: jax.ref.addupdate through a reshaped, transposed (or bitcast) view "
        "crashes in discharge ('ReshapeTransform' (up to 0.9.0.1 'RefReshaper') object has no "
        "attribute 'indices'; 'TransposeTransform' object has no attribute 'shape') "
        "where 0.12 discharges the reshape and refuses the transpose cleanly",
        symptoms=(("valid-runs", rf"AttributeError: '{view_class('Reshape', 'Transpose')}' object "
                                 r"has no attribute '(indices|shape)'"),
                  # ...and through a bitcast, whose refusal is the clean error there.
                  ("invalid-rejected", rf"^AttributeError: '{view_class('Reshape', 'Transpose', 'Bitcast')}' "
                                       r"object has no attribute '(indices|shape)'")),
        trigger=lambda case, k: isinstance(case.statements[k], AddUpdate) and _data_view_not_only_indexed(
            case, k),
        example=ir.Case((ir.Ref("int32", ()),), (AddUpdate(
            ir.View(0, (ir.Reshape((1,)),)), Iota("int32", (1,))),), paths=("abstract",))),
    KnownFinding(
        "masked-store-slice-and-dynamic-index-under-x64",
        "under jax.enable_x64, pltpu.store(x.at[:, i], v) (or x.at[i, :]) with i a traced "
        "int32 fails in discharge ('index arguments to dynamic_slice must be "
        "integers of the same type, got: int64, int32'): the slice's start "
        "becomes an int64 constant beside the int32 index; pltpu.load of the "
        "same view and x.at[:, i][...] = v work: _swap_discharge_rule "
        "(jax/_src/pallas/primitives.py) never casts its slice starts to one "
        "dtype, as the load's rule beside it does",
        symptoms=(("valid-runs", _INT64_BESIDE_INT32),
                  # ...and in an invalid program, before its own mistake is reached.
                  ("invalid-rejected", "^" + _INT64_BESIDE_INT32)),
        trigger=_masked_store_with_dynamic_index_under_x64,
        example=ir.Case((ir.Ref("float32", (1, 3)),), (MaskedStore(ir.View(0, (ir.At((
            ir.Slice(), ir.Int(0, True))),)), Iota("float32", (1,))),), paths=("jax_refs",),
            x64=True),
        severity=CRASH),
    KnownFinding(
        "eager-ref-ds-with-array-start",
        "an eager jax.new_ref indexed with pl.ds(start, n), start a JAX array "
        "(x[pl.ds(i, 1)], jax.ref.get(x, pl.ds(i, 1))), fails with "
        "TracerBoolConversionError: the eager get / swap traces its discharge "
        "rule, whose _is_trivial_indexer compares the (now traced) start with "
        "0 in Python; the same program under jax.jit works",
        symptoms=(("valid-runs", r"TracerBoolConversionError: Attempted boolean conversion of "
                                 r"traced array with shape bool\[\]"),),
        trigger=_ds_with_dynamic_start,
        example=ir.Case((ir.Ref("int32", (4,)),), (Get(ir.View(0, (ir.At((
            ir.Ds(ir.Int(1, True), 1),)),))),), paths=("eager",)),
        paths=("eager",),
        severity=CRASH),
    KnownFinding(
        "same-width-bitcast-below-2d",
        "x.bitcast(dtype) of the same width (int32 to float32) on a 1-D or 0-D "
        "ref fails with IndexError: list index out of range: "
        "jax._src.state.utils.bitcast sets shape[-2] even when the widths are "
        "equal and nothing changes (the 2-D bitcast works)",
        symptoms=(("valid-runs", r"IndexError: list index out of range"),
                  ("invalid-rejected", r"^IndexError: list index out of range")),
        trigger=_bitcast_below_2d,
        about=("ref", "dma"),   # a copy's view bitcasts through the same helper
        example=ir.Case((ir.Ref("int32", (3,)),), (Get(ir.View(0, (ir.Bitcast("float32"),))),),
                        paths=("abstract",)),
        severity=CRASH),
    KnownFinding(
        "debug-discharge-writes-back-its-refs",
        "jax.debug.callback (or print) of a kernel's operand ref and a "
        "pl.run_scoped ref in a pl.pallas_call kernel raises 'ValueError: Did "
        "not ask for inval to be discharged but it was'; either ref alone works. "
        "The discharge rules of debug_callback and debug_print "
        "(_debug_callback_state_discharge_rule, _debug_print_state_discharge_rule "
        "in jax/_src/debugging.py) return every operand as a new value ('return args, "
        "out'), so a ref a debug callback or print only reads is written back, "
        "though the primitive declares no effect on it (only DebugEffect), and "
        "where a discharge keeps a ref (run_scoped keeps s), that fails",
        symptoms=(("valid-runs", r"ValueError: Did not ask for inval to be discharged but it was"),
                  # ...in an invalid program, before its own mistake is reached.
                  ("invalid-rejected", r"^ValueError: Did not ask for inval to be discharged "
                                       r"but it was"),
                  ("effects", r"^debug_(callback|print) discharge returned a new value for "
                              r"operand \d+, which its effects \{DebugEffect\(None\)\} do not write")),
        # A ref kept (should_discharge) is written back all the same.
        consequences=tuple(
            (oracle, prefix + r"(ValueError: Did not ask for inval to be discharged but it was|"
                              # ...as the output of a wrapper's function.
                              r"ValueError: function .* traced for \w+ fun returned a mutable "
                              r"array reference of type Ref|"
                              # ...as a loop's carry: a ref in, a value out.
                              r"TypeError: while_loop body function carry input and carry "
                              r"output must have equal types)")
            # A kept ref: partial discharge, and pl.run_scoped's own (its
            # body is discharged with its scratch kept).
            for oracle, prefix in (("partial-discharge", "raised "), ("valid-runs", ""),
                                   ("invalid-rejected", "^"))) + (
            # Under vmap, the written-back ref reaches an array primitive.
            ("vmap-stack", r"vmap raised ValueError: Attempting to pass a Ref Ref\{"),
            # ...and the kept ref's value keeps its memory space.
            ("partial-discharge", r"raised TypeError: Primitive \w+ got aval \w+<\w+>\[[\d,]*\] "
                                  r"with unknown memory_space type")),
        trigger=lambda case, k: isinstance(case.statements[k], Inspect),
        # An operand ref and a scoped ref (kept by pl.run_scoped's discharge)
        # in one callback: public, on pallas_call.
        example=ir.Case((ir.Ref("float32", (2,)), ir.Ref("float32", (2,), scoped=True)),
                        (Inspect(ir.View(0), others=(ir.View(1),)),), paths=("pallas_call",)),
        severity=CRASH),
    KnownFinding(
        "eager-debug-callback-of-ref",
        "jax.debug.callback(f, x) or jax.debug.print('{}', x) of an eager "
        "jax.Ref x fails with TypeError: No pxla_result_handler for type "
        "AbstractRef: the eager debug primitive is dispatched as a jit that "
        "returns the ref (inside an eager jax.jit: 'No constant handler for "
        "type Ref'); under an outer jax.jit (and in kernels) the same call works",
        symptoms=(("valid-runs", r"TypeError: No pxla_result_handler for type: <class "
                                 r"'jax\._src\.state\.types\.AbstractRef'>|"
                                 # ...inside an eager jax.jit, which takes the ref as a constant.
                                 r"TypeError: No constant handler for type: <class "
                                 r"'jax\._src\.core\.Ref'>"),
                  # ...and in invalid programs, before their own mistake is reached.
                  ("invalid-rejected", r"^TypeError: No (pxla_result_handler|constant handler) "
                                       r"for type")),
        trigger=lambda case, k: isinstance(case.statements[k], Inspect),
        example=ir.Case((ir.Ref("float32", (2,)),), (Inspect(ir.View(0)),), paths=("eager",)),
        paths=("eager",),
        severity=CRASH),
    KnownFinding(
        "pallas-call-zero-size-operand",
        "pl.pallas_call(..., interpret=True) (and pl.kernel, and the TPU interpreter) with an "
        "operand that has a zero-size dimension fails with ZeroDivisionError "
        "in interpret utils' pad_to_block_dimension ((v - 1) // b with a block "
        "dimension of 0): even a kernel that copies its input to its output",
        symptoms=(("valid-runs", r"ZeroDivisionError: integer division or modulo by zero"),
                  ("invalid-rejected", r"^ZeroDivisionError: integer division or modulo by zero")),
        # The operand, not a statement, is the cause: any statement of a case
        # with a zero-size ref (mesh_kernel passes unused refs too; an invalid
        # program's mistake is a statement too).
        trigger=lambda case, k: any(0 in r.shape and not r.is_semaphore for r in case.refs),
        case_level=True,
        example=ir.Case((ir.Ref("float32", (0,)),), (Inspect(ir.View(0)),), paths=("pallas_call",)),
        paths=("nested", "pallas_call", "mesh_kernel", "tpu_interpret", "tpu_interpret_eager"),
        severity=CRASH),
    KnownFinding(
        "vmap-transformed-ref-indexed",
        "under a transformation (jax.vmap; jax.jvp, eagerly), a get or store through a "
        "transformed ref indexed again (jax.ref.get(x.at[:], slice(None)), "
        "x.at[:][:]) on a jax.new_ref fails with TypeError: Cannot transform type: "
        "VmapTracer(aval=Ref{bool[1]}, batched=Ref{bool[2,1]}); x[:] works. "
        "Eagerly under jax.jvp too ('Cannot transform type: JVPTracer(primal=Ref"
        "(...), tangent=Ref(...))'): TransformedRef.type (state/types.py) "
        "passes a traced ref on as it is, not its aval (core.typeof maps no "
        "tracer type), and NDIndexer.transform_type (state/indexing.py) takes "
        "only an aval",
        symptoms=(("vmap-stack", r"vmap raised TypeError: Cannot transform type: "
                                 r"VmapTracer\(aval=Ref\{"),
                  ("grad-matches", r"^eagerly, (fwd|rev) derivatives of .*: TypeError: Cannot "
                                   r"transform type: JVPTracer\(primal=Ref\(")),
        trigger=_through_a_transformed_ref,
        example=ir.Case((ir.Ref("float32", (1,)),), (Get(ir.View(0, (
            ir.At((ir.Slice(),)), ir.At((ir.Slice(),))))),), paths=("eager",)),
        paths=("eager",),
        severity=CRASH),
    KnownFinding(
        "ref-index-broadcast-has-no-ad-or-batching-rule",
        "indexing a jax.new_ref with a traced integer index beside an integer "
        "array index of another shape (r[i, jnp.array([0])], i read from "
        "another ref) raises NotImplementedError for state's broadcast_to "
        "primitive under reverse-mode AD of jax.jit (jax.grad, jax.vjp, "
        "jax.linearize): \"Differentiation rule for 'broadcast_to' not "
        "implemented\"; under jax.vmap of the index too (\"Batching rule for "
        "'broadcast_to' not implemented\"). NDIndexer.from_indices_shape (state/indexing.py) "
        "broadcasts the integer indexers with broadcast_to_p "
        "(state/primitives.py), which registers an impl, an abstract eval and "
        "lowerings but no JVP, transpose or batching rule. A static index, or "
        "one of the broadcast shape already, needs no broadcast and works",
        symptoms=(("grad-matches", r"^(eagerly, )?(fwd|rev) derivatives of .*: "
                                   r"NotImplementedError: Differentiation rule for "
                                   r"'broadcast_to' not implemented"),
                  ("vmap-stack", r"vmap raised NotImplementedError: Batching rule for "
                                 r"'broadcast_to' not implemented")),
        trigger=_dynamic_index_broadcast,
        example=ir.Case((ir.Ref("float32", (1, 1)),), (Get(ir.View(0, (
            ir.At((ir.Int(0, dynamic=True), ir.IntArray((0,)))),))),), paths=("eager",)),
        severity=CRASH),
    KnownFinding(
        "run-state-reverse-mode-fails",
        "reverse-mode AD of any pl.run_state program (jax.vjp, jax.grad, "
        "jax.linearize; direct linearization or not) raises 'Linearization "
        "failed to produce known values for all output primals', even for "
        "def body(refs): refs[0][...] += 1.0; forward mode (jax.jvp) is right",
        symptoms=(("grad-matches", r"^rev derivatives of .*: ValueError: Linearization failed to "
                                   r"produce known values for all output primals"),),
        # The program's, whatever it holds: every run_state program fails.
        trigger=lambda case, k: True,
        case_level=True,
        example=ir.Case((ir.Ref("float32", ()),), (AddUpdate(ir.View(0), Iota("float32", (), 1)),),
                        paths=("run_state",)),
        paths=("run_state",),
        severity=REFUSED),
    KnownFinding(
        "eager-jvp-of-integer-new-ref",
        "jax.jvp (or any forward-mode AD) of a function that, run eagerly, "
        "makes a jax.new_ref of an integer or bool array raises "
        "\"AttributeError: 'TypedNdArray' object has no attribute 'committed'\", "
        "even when the ref is never used: new_ref's JVP rule (_ref_jvp, "
        "state/primitives.py) makes the ref's float0 tangent a new_ref too, "
        "whose eager impl (_ref_impl, core.py) takes the float0 numpy array "
        "for a jax.Array. Under jax.jit it runs; so does a float ref. "
        "Regressed in 0.11.2 (0.8.0 to 0.11.1 differentiate it)",
        symptoms=(("grad-matches", r"^eagerly, (fwd|rev) derivatives of .*: AttributeError: "
                                   r"'TypedNdArray' object has no attribute 'committed'"),),
        # The program's: an integer or bool ref, or dynamic operands (dyn,
        # an int32 jax.new_ref).
        trigger=lambda case, k: bool(case.dynamic_values) or any(
            not r.kind.startswith(("float", "bfloat")) for r in case.refs),
        case_level=True,
        example=ir.Case((ir.Ref("float32", ()), ir.Ref("int32", ())), (
            Get(ir.View(0)), Get(ir.View(1))), paths=("eager",)),
        paths=("eager",),
        severity=CRASH),
    KnownFinding(
        "run-state-jvp-of-store-through-bitcast",
        "forward-mode AD (jax.jvp) of a pl.run_state program that stores an "
        "integer value through a bitcast view of a float ref "
        "(x.bitcast(jnp.int32)[1, 2] = 1065353216) raises 'Invalid dtype for "
        "`swap`. Ref dtype: int32. Value dtype: float0': the JVP stores the "
        "value's float0 tangent through the same view of the tangent ref; the "
        "jax.new_ref program under jit differentiates the same store",
        symptoms=(("grad-matches", r"^fwd derivatives of .*: ValueError: Invalid dtype for "
                                   r"`swap`\. Ref dtype: \w+\. Value dtype: \[\('float0'"),),
        trigger=lambda case, k: case.statements[k].primitive in ("swap", "masked_swap") and any(
            isinstance(t, ir.Bitcast) for t in case.statements[k].view.transforms)
            and case.refs[case.statements[k].view.ref].kind.startswith("float"),
        example=ir.Case((ir.Ref("float32", (2, 3)),), (Swap(ir.View(0, (
            ir.Bitcast("int32"), ir.At((ir.Int(1), ir.Int(2))))), Scalar(1065353216)),),
            paths=("run_state",)),
        paths=("run_state",),
        severity=CRASH),
    KnownFinding(
        "run-state-jvp-of-integer-addupdate",
        "forward-mode AD (jax.jvp) of a pl.run_state program fails on an "
        "addupdate to a ref whose tangent is a symbolic zero (an integer ref, "
        "or a float ref that does not depend on the input): run_state's JVP "
        "binds addupdate on that Zero ('Error interpreting argument to "
        "addupdate as a JAX value. The problematic value is of type <class "
        "'jax._src.ad_util.Zero'>'); a swap there is differentiated "
        "(addupdate_jvp_rule binds on the Zero tangent, where _swap_jvp checks for one)",
        symptoms=(("grad-matches", r"^fwd derivatives of .*: TypeError: Error interpreting "
                                   r"argument to addupdate as a JAX value\. The problematic "
                                   r"value is of type <class 'jax\._src\.ad_util\.Zero'>"),
                  # (0.7.1 to 0.9.1 word it so)
                  ("grad-matches", r"^fwd derivatives of .*: TypeError: Argument 'Zero\(Ref\{\w+\[[\d,]*\]\}\)' "
                                   r"of type '<class 'jax\._src\.ad_util\.Zero'>' is not a valid JAX type")),
        trigger=lambda case, k: isinstance(case.statements[k], AddUpdate) and not case.refs[
            case.statements[k].view.ref].kind.startswith(("float", "bfloat")),
        example=ir.Case((ir.Ref("float32", ()), ir.Ref("uint32", (2,))), (
            Get(ir.View(0)), AddUpdate(ir.View(1), Iota("uint32", (2,), 1))), paths=("run_state",)),
        paths=("run_state",),
        severity=CRASH),
    KnownFinding(
        "run-state-jvp-of-load-without-tangent",
        "forward-mode AD (jax.jvp) of a pl.run_state program fails on a "
        "pltpu.load or pltpu.store (the masked_load and masked_swap primitives, "
        "masked or not) of a ref that has "
        "no tangent (an integer ref, or a float16 one the jvp does not "
        "differentiate): Pallas' _load_jvp and _swap_jvp bind load_p and swap_p "
        "on the ref's tangent, "
        "which is None ('ValueError: Too few leaves for PyTreeDef; expected 1, "
        "got 0', in their abstract evals); x[...] of the "
        "same ref is differentiated. jax.jvp of a pallas_call(interpret=True) "
        "taken with respect to one input, whose kernel pltpu.loads another, "
        "fails so too, and then on the pallas_call's own JVP rule, which "
        "duplicates every input's block mapping ('safe_zip() argument 1 has "
        "length'; jax-ml/jax PR 37267, open)",
        # (one leaf short: the ref's tangent; a mask is another leaf)
        symptoms=(("grad-matches", r"^fwd derivatives of .*: ValueError: Too few leaves for "
                                   r"PyTreeDef; expected (\d+), got (\d+)"),),
        # (grad-matches differentiates the float32 and float64 refs: a
        # float16 one has no tangent either)
        trigger=lambda case, k: isinstance(case.statements[k], (MaskedLoad, MaskedStore)) and
            case.refs[case.statements[k].view.ref].kind not in ("float32", "float64"),
        example=ir.Case((ir.Ref("float32", ()), ir.Ref("int32", (2,))), (
            Get(ir.View(0)), MaskedLoad(ir.View(1))), paths=("run_state",)),
        paths=("run_state",),
        severity=CRASH),
)
