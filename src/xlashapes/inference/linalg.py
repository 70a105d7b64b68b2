"""Linear algebra: dot, convolution, cholesky, triangular-solve, fft and the batch-norm family."""

from __future__ import annotations

from ..dtypes import ELEMENT_TYPES, ElementType
from ..errors import ShapeError
from ..shape import UNBOUNDED_SIZE, Shape
from ._common import Call, array_shape, like, text, tuple_of, window_dims, windowed_dimensions
from .elementwise import higher_precision


def _sizes_match(a: int, b: int) -> bool:
    return a == b or UNBOUNDED_SIZE in (a, b)


def _result_type(call: Call, lhs: Shape, rhs: Shape) -> ElementType:
    """ShapeUtil::HigherPrecisionElementType of the operands (XLA's parser asks for no preferred type)."""
    return higher_precision(lhs.element_type, rhs.element_type)


def dot_shape(call: Call) -> Shape:
    """shape_inference.cc, InferDotOpShape: batch dims, then lhs then rhs free dims; contracting sizes match.

    >>> from xlashapes import parse_shape
    >>> attrs = {"lhs_batch_dims": (0,), "rhs_batch_dims": (0,), "lhs_contracting_dims": (2,),
    ...          "rhs_contracting_dims": (1,)}
    >>> str(dot_shape(Call("dot", (parse_shape("f32[8,2,3]"), parse_shape("f32[8,3,5]")), attrs, {})))
    'f32[8,2,5]{2,1,0}'
    """
    call.count(2)
    lhs, rhs = call.array(0, "lhs"), call.array(1, "rhs")
    lc, rc = call.integers("lhs_contracting_dims", ()), call.integers("rhs_contracting_dims", ())
    lb, rb = call.integers("lhs_batch_dims", ()), call.integers("rhs_batch_dims", ())
    for side, shape, dims in (("lhs", lhs, lc + lb), ("rhs", rhs, rc + rb)):
        if any(not 0 <= d < shape.rank for d in dims):
            raise ShapeError(f"dot {side} dimension numbers {list(dims)} are out of range for {text(shape)}")
        if len(set(dims)) != len(dims):
            raise ShapeError(f"dot {side} dimension numbers {list(dims)} repeat a dimension")
    if len(lc) != len(rc):
        raise ShapeError(f"dot has {len(lc)} lhs and {len(rc)} rhs contracting dimensions")
    for a, b in zip(lc, rc):
        if not _sizes_match(lhs.dimensions[a], rhs.dimensions[b]):
            raise ShapeError(f"dot contracting dimension sizes differ: lhs {text(lhs)} dim {a}, "
                             f"rhs {text(rhs)} dim {b}")
    if len(lb) != len(rb):
        raise ShapeError(f"dot has {len(lb)} lhs and {len(rb)} rhs batch dimensions")
    for a, b in zip(lb, rb):
        if not _sizes_match(lhs.dimensions[a], rhs.dimensions[b]):
            raise ShapeError(f"dot batch dimension sizes differ: lhs {text(lhs)} dim {a}, rhs {text(rhs)} dim {b}")
    etype = _result_type(call, lhs, rhs)
    sizes: list[int] = []
    flags: list[bool] = []
    for a in lb:  # batch dims come from the lhs, as written there
        sizes.append(lhs.dimensions[a])
        flags.append(lhs.dynamic_dimensions[a])
    for shape, skip in ((lhs, set(lc) | set(lb)), (rhs, set(rc) | set(rb))):
        for i in range(shape.rank):
            if i not in skip:
                sizes.append(shape.dimensions[i])
                flags.append(shape.dynamic_dimensions[i])
    return array_shape(etype, sizes, flags)


def _labels(labels: str) -> tuple[str, str, str]:
    """``b01f_01io->b01f`` as (input, kernel, output) labels."""
    try:
        operands, output = labels.split("->")
        lhs, rhs = operands.split("_")
    except ValueError:
        raise ShapeError(f"dim_labels {labels!r} is not like b01f_01io->b01f") from None
    return lhs, rhs, output


def _positions(labels: str, letters: str, spatial: int, what: str) -> tuple[dict[str, int], list[int]]:
    """Where each letter and each spatial digit sits in ``labels``."""
    expected = sorted(letters + "".join(str(i) for i in range(spatial)))
    if sorted(labels) != expected:
        raise ShapeError(f"convolution {what} labels {labels!r} must hold {''.join(letters)} and spatial digits "
                         f"0..{spatial - 1} once each")
    return ({c: labels.index(c) for c in letters}, [labels.index(str(i)) for i in range(spatial)])


def convolution_shape(call: Call) -> Shape:
    """shape_inference.cc, InferConvolveShape: batch / batch_group_count, output features, windowed spatial dims.

    >>> from xlashapes import parse_shape
    >>> attrs = {"window": {"size": (3, 3), "pad": ((1, 1), (1, 1))}, "dim_labels": "b01f_01io->b01f"}
    >>> str(convolution_shape(Call("convolution", (parse_shape("f32[8,32,32,3]"), parse_shape("f32[3,3,3,16]")),
    ...                            attrs, {})))
    'f32[8,32,32,16]{3,2,1,0}'
    """
    call.count(2)
    lhs, rhs = call.array(0, "input"), call.array(1, "kernel")
    fgc = call.integer("feature_group_count", 1)
    bgc = call.integer("batch_group_count", 1)
    if fgc <= 0 or bgc <= 0:
        raise ShapeError(f"convolution group counts must be positive, got feature {fgc} and batch {bgc}")
    if fgc > 1 and bgc > 1:
        raise ShapeError("convolution cannot have both feature_group_count and batch_group_count above 1")
    in_labels, k_labels, out_labels = _labels(call.word("dim_labels", "bf_io->bf"))
    spatial = lhs.rank - 2
    if spatial < 0 or rhs.rank != lhs.rank:
        raise ShapeError(f"convolution input {text(lhs)} and kernel {text(rhs)} need the same rank >= 2")
    inp, in_spatial = _positions(in_labels, "bf", spatial, "input")
    ker, k_spatial = _positions(k_labels, "io", spatial, "kernel")
    out, out_spatial = _positions(out_labels, "bf", spatial, "output")
    etype = _result_type(call, lhs, rhs)
    window = window_dims(call.get("window", None), spatial, "convolution window")
    batch, features = lhs.dimensions[inp["b"]], lhs.dimensions[inp["f"]]
    k_in, k_out = rhs.dimensions[ker["i"]], rhs.dimensions[ker["o"]]
    if features != UNBOUNDED_SIZE:
        if features % fgc:
            raise ShapeError(f"convolution input features {features} are not a multiple of feature_group_count {fgc}")
        if features // fgc != k_in:
            raise ShapeError(f"convolution input features {features} / feature_group_count {fgc} do not match the "
                             f"kernel's input features {k_in}")
    if k_out % fgc or k_out % bgc:
        raise ShapeError(f"convolution kernel output features {k_out} are not a multiple of the group count")
    if batch != UNBOUNDED_SIZE and batch % bgc:
        raise ShapeError(f"convolution input batch {batch} is not a multiple of batch_group_count {bgc}")
    for i, dim in enumerate(window):
        if dim.size != rhs.dimensions[k_spatial[i]]:
            raise ShapeError(f"convolution window size {dim.size} of spatial dimension {i} does not match the "
                             f"kernel's {rhs.dimensions[k_spatial[i]]}")
    base = array_shape(lhs.element_type, [lhs.dimensions[p] for p in in_spatial],
                       [lhs.dynamic_dimensions[p] for p in in_spatial])
    sizes, dynamic = windowed_dimensions(base, window, "convolution")
    dims = [0] * lhs.rank
    flags = [False] * lhs.rank
    dims[out["b"]] = batch // bgc if batch != UNBOUNDED_SIZE else batch
    flags[out["b"]] = lhs.dynamic_dimensions[inp["b"]]
    dims[out["f"]] = k_out
    flags[out["f"]] = rhs.dynamic_dimensions[ker["o"]]
    for i, position in enumerate(out_spatial):
        dims[position], flags[position] = sizes[i], dynamic[i]
    return array_shape(etype, dims, flags)


def cholesky_shape(call: Call) -> Shape:
    """shape_inference.cc, InferCholeskyShape: a float/complex batch of square matrices, same shape out.

    >>> from xlashapes import parse_shape
    >>> str(cholesky_shape(Call("cholesky", (parse_shape("f32[2,4,4]"),), {}, {})))
    'f32[2,4,4]{2,1,0}'
    """
    call.count(1)
    a = call.array(0, "a")
    if not (a.element_type.is_floating or a.element_type.is_complex):
        raise ShapeError(f"cholesky expects floating-point or complex elements, got {text(a)}")
    if a.rank < 2:
        raise ShapeError(f"cholesky expects at least 2 dimensions, got {text(a)}")
    if not _sizes_match(a.dimensions[-1], a.dimensions[-2]):
        raise ShapeError(f"cholesky's two minor dimensions must be equal, got {text(a)}")
    return like(a)


def triangular_solve_shape(call: Call) -> Shape:
    """shape_inference.cc, InferTriangularSolveShape: b's shape; a is square and matches b on the solved side.

    >>> from xlashapes import parse_shape
    >>> call = Call("triangular-solve", (parse_shape("f32[3,3]"), parse_shape("f32[3,5]")), {"left_side": True}, {})
    >>> str(triangular_solve_shape(call))
    'f32[3,5]{1,0}'
    """
    call.count(2)
    a, b = call.array(0, "a"), call.array(1, "b")
    if not (a.element_type.is_floating or a.element_type.is_complex):
        raise ShapeError(f"triangular-solve expects floating-point or complex elements, got {text(a)}")
    if a.element_type != b.element_type:
        raise ShapeError(f"triangular-solve operands {text(a)} and {text(b)} have different element types")
    if a.rank < 2 or a.rank != b.rank:
        raise ShapeError(f"triangular-solve operands {text(a)} and {text(b)} need one rank >= 2")
    if not _sizes_match(a.dimensions[-1], a.dimensions[-2]):
        raise ShapeError(f"triangular-solve's a must be square in its two minor dimensions, got {text(a)}")
    if any(not _sizes_match(x, y) for x, y in zip(a.dimensions[:-2], b.dimensions[:-2])):
        raise ShapeError(f"triangular-solve batch dimensions of {text(a)} and {text(b)} differ")
    left = call.flag("left_side", False)
    solved = b.dimensions[-2] if left else b.dimensions[-1]
    if not _sizes_match(solved, a.dimensions[-1]):
        raise ShapeError(f"triangular-solve: {text(a)} does not fit the {'left' if left else 'right'} side of "
                         f"{text(b)}")
    if call.has("transpose_a") and call.word("transpose_a") not in ("NO_TRANSPOSE", "TRANSPOSE", "ADJOINT"):
        raise ShapeError(f"triangular-solve transpose_a must be NO_TRANSPOSE, TRANSPOSE or ADJOINT, got "
                         f"{call.get('transpose_a')!r}")
    return like(b)


def fft_shape(call: Call) -> Shape:
    """shape_inference.cc, InferFftShape: FFT/IFFT keep the shape, RFFT halves the last length, IRFFT restores it.

    >>> from xlashapes import parse_shape
    >>> attrs = {"fft_type": "RFFT", "fft_length": (8,)}
    >>> str(fft_shape(Call("fft", (parse_shape("f32[4,8]"),), attrs, {})))
    'c64[4,5]{1,0}'
    """
    call.count(1)
    operand = call.array(0)
    kind = call.word("fft_type", "FFT")
    lengths = call.integers("fft_length")
    k = len(lengths)
    if not 1 <= k <= 3:
        raise ShapeError(f"fft_length has {k} entries; FFT works on 1 to 3 dimensions")
    if operand.rank < k:
        raise ShapeError(f"fft over {k} dimensions needs an operand of rank >= {k}, got {text(operand)}")
    etype = operand.element_type
    dims = list(operand.dimensions)
    minor = dims[operand.rank - k:]
    if kind in ("FFT", "IFFT"):
        if not etype.is_complex:
            raise ShapeError(f"{kind} expects complex elements, got {text(operand)}")
        return like(operand)
    if kind == "RFFT":
        if etype.name not in ("f32", "f64"):
            raise ShapeError(f"RFFT expects f32 or f64 elements, got {text(operand)}")
        if any(not _sizes_match(d, n) for d, n in zip(minor, lengths)):
            raise ShapeError(f"RFFT fft_length {list(lengths)} does not match the minor dims of {text(operand)}")
        if lengths[-1]:
            dims[-1] = lengths[-1] // 2 + 1
        return array_shape(ELEMENT_TYPES["c64" if etype.name == "f32" else "c128"], dims,
                           operand.dynamic_dimensions)
    if kind == "IRFFT":
        if not etype.is_complex:
            raise ShapeError(f"IRFFT expects complex elements, got {text(operand)}")
        if any(not _sizes_match(d, n) for d, n in zip(minor[:-1], lengths[:-1])):
            raise ShapeError(f"IRFFT fft_length {list(lengths)} does not match the minor dims of {text(operand)}")
        half = lengths[-1] // 2 + 1 if lengths[-1] else 0
        if not _sizes_match(minor[-1], half):
            raise ShapeError(f"IRFFT's last dimension must be fft_length/2+1 = {half}, got {text(operand)}")
        dims[-1] = lengths[-1]
        return array_shape(ELEMENT_TYPES["f32" if etype.name == "c64" else "f64"], dims,
                           operand.dynamic_dimensions)
    raise ShapeError(f"unknown fft_type {kind!r}; expected FFT, IFFT, RFFT or IRFFT")


def batch_norm_shape(call: Call) -> Shape:
    """shape_inference.cc, InferBatchNorm{Training,Inference,Grad}Shape: per-feature vectors of feature_index's size.

    >>> from xlashapes import parse_shape
    >>> x, v = parse_shape("f32[8,4]"), parse_shape("f32[4]")
    >>> str(batch_norm_shape(Call("batch-norm-training", (x, v, v), {"feature_index": 1, "epsilon": 0.001}, {})))
    '(f32[8,4]{1,0}, f32[4]{0}, f32[4]{0})'
    """
    op = call.opcode
    call.count({"batch-norm-training": 3, "batch-norm-inference": 5, "batch-norm-grad": 5}[op])
    shapes = call.arrays()
    operand = shapes[0]
    names = {"batch-norm-training": ("scale", "offset"),
             "batch-norm-inference": ("scale", "offset", "mean", "variance"),
             "batch-norm-grad": ("scale", "mean", "variance", "grad_output")}[op]
    feature = call.integer("feature_index")
    if operand.rank < 1:
        raise ShapeError(f"{op} operand must have rank >= 1, got {text(operand)}")
    if not 0 <= feature < operand.rank:
        raise ShapeError(f"{op} feature_index {feature} is out of range for {text(operand)}")
    if not operand.element_type.is_floating:
        raise ShapeError(f"{op} expects floating-point elements, got {text(operand)}")
    size = operand.dimensions[feature]
    for name, shape in zip(names, shapes[1:]):
        if shape.element_type != operand.element_type:
            raise ShapeError(f"{op} {name} {text(shape)} must have the operand's element type")
        if name == "grad_output":
            if shape.dimensions != operand.dimensions:
                raise ShapeError(f"{op} grad_output {text(shape)} must match the operand {text(operand)}")
            continue
        if shape.rank != 1:
            raise ShapeError(f"{op} {name} must have rank 1, got {text(shape)}")
        if not _sizes_match(shape.dimensions[0], size):
            raise ShapeError(f"{op} {name} {text(shape)} must have the feature dimension's size {size}")
    if op == "batch-norm-inference":
        return like(operand)
    vector = array_shape(operand.element_type, (size,), (operand.dynamic_dimensions[feature],))
    return tuple_of([operand, vector, vector])


def ragged_dot_shape(call: Call) -> Shape:
    """shape_inference.cc, InferRaggedDotOpShape: a dot with rhs's group dim dropped (or a new major group dim).

    The lhs ragged dim decides the mode: a free lhs dim gives the dot of lhs with one rhs group; a contracting
    one gives one result per group (a new major dim of the group count); a batch one gives the plain dot.

    >>> from xlashapes import parse_shape
    >>> attrs = {"lhs_contracting_dims": (1,), "rhs_contracting_dims": (1,), "lhs_ragged_dims": (0,),
    ...          "rhs_group_dims": (0,)}
    >>> operands = (parse_shape("f32[8,4]"), parse_shape("f32[3,4,5]"), parse_shape("s32[3]"))
    >>> str(ragged_dot_shape(Call("ragged-dot", operands, attrs, {})))
    'f32[8,5]{1,0}'
    """
    call.count(3)
    lhs, rhs, groups = call.array(0, "lhs"), call.array(1, "rhs"), call.array(2, "group sizes")
    if not groups.element_type.is_integral or groups.rank < 1:
        raise ShapeError(f"ragged-dot group sizes must be an integer array, got {text(groups)}")
    ragged = call.integers("lhs_ragged_dims", ())
    group_dims = call.integers("rhs_group_dims", ())
    if len(ragged) != 1:
        raise ShapeError(f"ragged-dot needs exactly one lhs_ragged_dims entry, got {list(ragged)}")
    if len(group_dims) > 1:
        raise ShapeError(f"ragged-dot allows at most one rhs_group_dims entry, got {list(group_dims)}")
    lc, rc = call.integers("lhs_contracting_dims", ()), call.integers("rhs_contracting_dims", ())
    lb, rb = call.integers("lhs_batch_dims", ()), call.integers("rhs_batch_dims", ())
    dim = ragged[0]
    if not 0 <= dim < lhs.rank:
        raise ShapeError(f"ragged-dot lhs_ragged_dims {dim} is out of range for {text(lhs)}")
    rhs_dims, rhs_flags = list(rhs.dimensions), list(rhs.dynamic_dimensions)
    if group_dims:
        g = group_dims[0]
        if not 0 <= g < rhs.rank or g in rc or g in rb:
            raise ShapeError(f"ragged-dot rhs_group_dims {g} must be a free dimension of {text(rhs)}")
        if dim in lc or dim in lb:
            raise ShapeError("ragged-dot with rhs_group_dims needs a free lhs ragged dimension")
        del rhs_dims[g], rhs_flags[g]
        renumber = {old: old - (old > g) for old in range(rhs.rank)}
        rc, rb = tuple(renumber[d] for d in rc), tuple(renumber[d] for d in rb)
    plain = Call("dot", (lhs, array_shape(rhs.element_type, rhs_dims, rhs_flags)),
                 {"lhs_contracting_dims": lc, "rhs_contracting_dims": rc, "lhs_batch_dims": lb,
                  "rhs_batch_dims": rb}, {})
    result = dot_shape(plain)
    if dim in lc:
        count = groups.dimensions[-1]
        return array_shape(result.element_type, (count, *result.dimensions), (False, *result.dynamic_dimensions))
    return result


def scaled_dot_shape(call: Call) -> Shape:
    """shape_inference.cc, InferScaledDotOpShape: the dot of lhs and rhs; operands (lhs, lhs_scale, rhs, rhs_scale).

    XLA's parser (jaxlib 0.10.2) does not compare the scales' dims with the operands'.

    >>> from xlashapes import parse_shape
    >>> operands = tuple(parse_shape(s) for s in ("f8e4m3fn[8,32]", "f32[8,1]", "f8e4m3fn[32,5]", "f32[1,5]"))
    >>> attrs = {"lhs_contracting_dims": (1,), "rhs_contracting_dims": (0,)}
    >>> str(scaled_dot_shape(Call("scaled-dot", operands, attrs, {})))
    'f8e4m3fn[8,5]{1,0}'
    """
    call.count(4)
    lhs, _, rhs, _ = call.arrays()
    return dot_shape(Call("dot", (lhs, rhs), call.attributes, {}))
