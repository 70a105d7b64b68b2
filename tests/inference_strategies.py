"""Hypothesis strategies that make one-instruction HLO cases for every opcode family (see oracle_inference.Case)."""

from __future__ import annotations

from hypothesis import strategies as st
from oracle_inference import Case, comparator, producing, scalar_reducer

ARRAY_TYPES = ("pred", "s8", "s32", "s64", "u8", "u32", "f16", "bf16", "f32", "f64", "c64", "c128", "f8e4m3fn")
FLOATS = ("f16", "bf16", "f32", "f64")
UNARY = ("abs", "negate", "sign", "not", "is-finite", "real", "imag", "copy", "floor", "ceil", "round-nearest-afz",
         "round-nearest-even", "erf", "cosine", "sine", "exponential", "exponential-minus-one", "log",
         "log-plus-one", "logistic", "rsqrt", "sqrt", "cbrt", "tanh", "tan", "acos", "asin", "atanh", "acosh",
         "asinh", "cosh", "sinh", "count-leading-zeros", "popcnt")
BINARY = ("add", "subtract", "multiply", "divide", "remainder", "power", "maximum", "minimum", "atan2", "and", "or",
          "xor", "shift-left", "shift-right-arithmetic", "shift-right-logical", "complex", "mulhi", "compare")


def _dim_text(size: int, dynamic: bool) -> str:
    return f"<={size}" if dynamic else str(size)


@st.composite
def dims(draw: st.DrawFn, rank: int | None = None, dynamic: bool = True, low: int = 0, high: int = 5) -> list[str]:
    """Dimension texts: sizes in [low, high], some ``<=N`` when ``dynamic``."""
    count = draw(st.integers(0, 3)) if rank is None else rank
    out = []
    for _ in range(count):
        size = draw(st.integers(low, high))
        out.append(_dim_text(size, dynamic and draw(st.integers(0, 5)) == 0))
    return out


def shape(etype: str, sizes: list[str] | tuple[str, ...]) -> str:
    return f"{etype}[{','.join(sizes)}]"


def static(sizes: list[str]) -> list[int]:
    return [int(s.lstrip("<=")) for s in sizes]


@st.composite
def unary_cases(draw: st.DrawFn) -> Case:
    op = draw(st.sampled_from(UNARY))
    return Case(op, (shape(draw(st.sampled_from(ARRAY_TYPES)), draw(dims())),))


@st.composite
def binary_cases(draw: st.DrawFn) -> Case:
    op = draw(st.sampled_from(BINARY))
    a = draw(st.sampled_from(ARRAY_TYPES))
    b = draw(st.sampled_from((a, a, a, *FLOATS)))
    lhs = draw(dims())
    how = draw(st.integers(0, 5))
    if how == 0:
        rhs = draw(dims())
    elif how == 1:
        rhs = []
    elif how == 2:
        rhs = [draw(st.sampled_from((d, "1", "<=1", d))) for d in lhs]
    else:
        rhs = [draw(st.sampled_from((d, d, d, d.lstrip("<="), "<=" + d.lstrip("<=")))) for d in lhs]
    if draw(st.booleans()):
        lhs, rhs = rhs, lhs
    attrs = f"direction={draw(st.sampled_from(('EQ', 'NE', 'LT', 'GE')))}" if op == "compare" else ""
    return Case(op, (shape(a, lhs), shape(b, rhs)), attrs)


@st.composite
def ternary_cases(draw: st.DrawFn) -> Case:
    op = draw(st.sampled_from(("select", "clamp")))
    t = draw(st.sampled_from(ARRAY_TYPES))
    sizes = draw(dims())

    def variant() -> str:
        choice = draw(st.integers(0, 6))
        if choice == 0:
            return shape(t, [])
        if choice == 1:
            return shape(draw(st.sampled_from(ARRAY_TYPES)), sizes)
        if choice == 2:
            return shape(t, draw(dims()))
        return shape(t, [draw(st.sampled_from((d, d.lstrip("<=")))) for d in sizes])

    middle = shape(t, sizes)
    if op == "select":
        pred = variant().replace(t + "[", "pred[", 1) if draw(st.integers(0, 5)) else variant()
        return Case(op, (pred, middle, variant()))
    return Case(op, (variant(), middle, variant()))


@st.composite
def movement_cases(draw: st.DrawFn) -> Case:
    op = draw(st.sampled_from(("transpose", "reverse", "concatenate", "pad", "get-dimension-size",
                               "set-dimension-size", "broadcast")))
    t = draw(st.sampled_from(ARRAY_TYPES))
    sizes = draw(dims(rank=draw(st.integers(0, 3))))
    rank = len(sizes)
    operand = shape(t, sizes)
    if op == "transpose":
        perm = draw(st.permutations(range(rank)))
        if draw(st.integers(0, 5)) == 0:
            perm = draw(st.lists(st.integers(-1, rank), max_size=rank + 1))
        return Case(op, (operand,), f"dimensions={{{','.join(map(str, perm))}}}")
    if op == "reverse":
        chosen = draw(st.lists(st.integers(-1, rank), max_size=rank + 1))
        return Case(op, (operand,), f"dimensions={{{','.join(map(str, chosen))}}}")
    if op == "broadcast":
        new = draw(st.lists(st.integers(0, 4), max_size=2))
        return Case(op, (operand,), f"dimensions={{{','.join(map(str, new))}}}")
    if op in ("get-dimension-size", "set-dimension-size"):
        dim = draw(st.integers(-1, rank))
        operands = (operand,) if op == "get-dimension-size" else (operand, draw(st.sampled_from(("s32[]", "s64[]"))))
        return Case(op, operands, f"dimensions={{{dim}}}")
    if op == "pad":
        config = "x".join(
            "_".join(str(v) for v in (draw(st.integers(-2, 3)), draw(st.integers(-2, 3)))
                     + ((draw(st.integers(-1, 2)),) if draw(st.booleans()) else ()))
            for _ in range(rank + (1 if draw(st.integers(0, 8)) == 0 else 0)))
        value = shape(draw(st.sampled_from((t, t, t, "f32"))), [] if draw(st.integers(0, 6)) else ["1"])
        if not config:
            return Case(op, (shape(t, ["2"]), value), "padding=0_0")
        return Case(op, (operand, value), f"padding={config}")
    count = draw(st.integers(1, 3))
    dim = draw(st.integers(-1, rank)) if rank else 0
    operands = [operand]
    for _ in range(count - 1):
        other = list(sizes)
        if 0 <= dim < rank:
            other[dim] = draw(st.sampled_from(("0", "2", "<=3", "5")))
        if draw(st.integers(0, 6)) == 0 and other:
            other[0] = "7"
        operands.append(shape(draw(st.sampled_from((t, t, "f32"))), other))
    return Case(op, tuple(operands), f"dimensions={{{dim}}}")


@st.composite
def dot_cases(draw: st.DrawFn) -> Case:
    batch = draw(dims(rank=draw(st.integers(0, 2)), low=1))
    contract = draw(dims(rank=draw(st.integers(0, 2)), low=1))
    lhs_free = draw(dims(rank=draw(st.integers(0, 2))))
    rhs_free = draw(dims(rank=draw(st.integers(0, 2))))
    lhs_parts = [("b", i) for i in range(len(batch))] + [("c", i) for i in range(len(contract))] + \
        [("f", i) for i in range(len(lhs_free))]
    rhs_parts = [("b", i) for i in range(len(batch))] + [("c", i) for i in range(len(contract))] + \
        [("f", i) for i in range(len(rhs_free))]
    lhs_order = draw(st.permutations(lhs_parts))
    rhs_order = draw(st.permutations(rhs_parts))

    def size(kind: str, i: int, free: list[str]) -> str:
        return {"b": batch, "c": contract, "f": free}[kind][i]

    lhs = [size(k, i, lhs_free) for k, i in lhs_order]
    rhs = [size(k, i, rhs_free) for k, i in rhs_order]
    if draw(st.integers(0, 5)) == 0 and rhs:
        rhs[draw(st.integers(0, len(rhs) - 1))] = "9"
    def where(order: list[tuple[str, int]], kind: str) -> list[int]:
        return [order.index((kind, i)) for i in range(len(batch) if kind == "b" else len(contract))]
    lb, rb, lc, rc = where(lhs_order, "b"), where(rhs_order, "b"), where(lhs_order, "c"), where(rhs_order, "c")
    if draw(st.integers(0, 6)) == 0:
        rc = rc[:-1]
    a = draw(st.sampled_from(("f32", "f32", "bf16", "s32", "s8", "c64", "pred")))
    b = draw(st.sampled_from((a, a, a, "f32", "f16")))
    attrs = []
    for key, values in (("lhs_batch_dims", lb), ("lhs_contracting_dims", lc), ("rhs_batch_dims", rb),
                        ("rhs_contracting_dims", rc)):
        if values or draw(st.booleans()):
            attrs.append(f"{key}={{{','.join(map(str, values))}}}")
    return Case("dot", (shape(a, lhs), shape(b, rhs)), ", ".join(attrs))


@st.composite
def convolution_cases(draw: st.DrawFn) -> Case:
    spatial = draw(st.integers(0, 2))
    digits = [str(i) for i in range(spatial)]
    in_labels = "".join(draw(st.permutations(["b", "f", *digits])))
    k_labels = "".join(draw(st.permutations(["i", "o", *digits])))
    out_labels = "".join(draw(st.permutations(["b", "f", *digits])))
    fgc = draw(st.sampled_from((1, 1, 1, 2, 3)))
    bgc = draw(st.sampled_from((1, 1, 1, 2))) if fgc == 1 else 1
    batch = draw(st.integers(1, 4)) * bgc
    k_in = draw(st.integers(1, 3))
    features = k_in * fgc
    k_out = draw(st.integers(1, 3)) * fgc * bgc
    if draw(st.integers(0, 8)) == 0:
        k_out += 1
    sizes = [draw(st.integers(1, 6)) for _ in range(spatial)]
    window = [draw(st.integers(1, 3)) for _ in range(spatial)]
    lhs = {"b": str(batch), "f": str(features)}
    rhs = {"i": str(k_in), "o": str(k_out)}
    for i in range(spatial):
        lhs[str(i)] = _dim_text(sizes[i], draw(st.integers(0, 6)) == 0)
        rhs[str(i)] = str(window[i])
    parts = []
    if spatial:
        parts.append("size=" + "x".join(map(str, window)))
        if draw(st.booleans()):
            parts.append("stride=" + "x".join(str(draw(st.integers(1, 3))) for _ in range(spatial)))
        if draw(st.booleans()):
            parts.append("pad=" + "x".join(f"{draw(st.integers(-1, 2))}_{draw(st.integers(-1, 2))}"
                                           for _ in range(spatial)))
        if draw(st.booleans()):
            parts.append("lhs_dilate=" + "x".join(str(draw(st.integers(1, 2))) for _ in range(spatial)))
        if draw(st.booleans()):
            parts.append("rhs_dilate=" + "x".join(str(draw(st.integers(1, 2))) for _ in range(spatial)))
    attrs = [f"window={{{' '.join(parts)}}}"] if parts else []
    attrs.append(f"dim_labels={in_labels}_{k_labels}->{out_labels}")
    if fgc > 1:
        attrs.append(f"feature_group_count={fgc}")
    if bgc > 1:
        attrs.append(f"batch_group_count={bgc}")
    t = draw(st.sampled_from(("f32", "f32", "bf16", "s32")))
    u = draw(st.sampled_from((t, t, t, "f32")))
    return Case("convolution", (shape(t, [lhs[c] for c in in_labels]), shape(u, [rhs[c] for c in k_labels])),
                ", ".join(attrs))


def _window_text(draw: st.DrawFn, rank: int) -> str:
    if rank == 0:
        return "{}"
    parts = ["size=" + "x".join(str(draw(st.integers(1, 3))) for _ in range(rank))]
    if draw(st.booleans()):
        parts.append("stride=" + "x".join(str(draw(st.integers(1, 2))) for _ in range(rank)))
    if draw(st.booleans()):
        parts.append("pad=" + "x".join(f"{draw(st.integers(0, 1))}_{draw(st.integers(0, 1))}" for _ in range(rank)))
    if draw(st.integers(0, 3)) == 0:
        parts.append("lhs_dilate=" + "x".join(str(draw(st.integers(1, 2))) for _ in range(rank)))
    if draw(st.integers(0, 3)) == 0:
        parts.append("rhs_dilate=" + "x".join(str(draw(st.integers(1, 2))) for _ in range(rank)))
    return "{" + " ".join(parts) + "}"


@st.composite
def reduction_cases(draw: st.DrawFn) -> Case:
    op = draw(st.sampled_from(("reduce", "reduce-window", "sort", "map", "topk", "select-and-scatter")))
    n = draw(st.integers(1, 2)) if op not in ("topk", "select-and-scatter") else 1
    types = tuple(draw(st.sampled_from(("f32", "s32", "bf16", "pred"))) for _ in range(n))
    sizes = draw(dims(rank=draw(st.integers(0 if op != "topk" else 1, 3)), low=1))
    rank = len(sizes)
    inputs = [shape(t, sizes) for t in types]
    if draw(st.integers(0, 8)) == 0 and n > 1 and rank:
        inputs[1] = shape(types[1], ["9", *sizes[1:]])
    if op == "reduce":
        chosen = draw(st.lists(st.integers(-1 if draw(st.integers(0, 8)) == 0 else 0, max(rank - 1, 0)),
                               max_size=rank, unique=True)) if rank else []
        init_types = tuple(draw(st.sampled_from((t, t, t, "f32"))) for t in types)
        reducer = scalar_reducer(init_types)
        return Case(op, (*inputs, *(f"{t}[]" for t in init_types)),
                    f"dimensions={{{','.join(map(str, sorted(chosen)))}}}, to_apply=red", (("red", reducer),))
    if op == "reduce-window":
        return Case(op, (*inputs, *(f"{t}[]" for t in types)), f"window={_window_text(draw, rank)}, to_apply=red",
                    (("red", scalar_reducer(types)),))
    if op == "sort":
        dim = draw(st.integers(0, max(rank - 1, 0))) if draw(st.integers(0, 8)) else rank
        return Case(op, tuple(inputs), f"dimensions={{{dim}}}, to_apply=cmp", (("cmp", comparator(types)),))
    if op == "map":
        result = draw(st.sampled_from(("f32", "s32", *types)))
        comp = producing(tuple(f"{t}[]" for t in types), f"{result}[]")
        return Case(op, tuple(inputs), f"dimensions={{{','.join(map(str, range(rank)))}}}, to_apply=f", (("f", comp),))
    if op == "topk":
        k = draw(st.integers(0, static(sizes)[-1] + 1))
        return Case(op, tuple(inputs), f"k={k}" + (", largest=false" if draw(st.booleans()) else ""))
    # select-and-scatter: the source is the windowed operand
    t = types[0] if types[0] != "pred" else "f32"
    operand = shape(t, [s.lstrip("<=") for s in sizes])
    window = _window_text(draw, rank).replace("lhs_dilate", "stride").replace("rhs_dilate", "stride")
    if window.count("stride=") > 1:
        window = "{" + " ".join(p for p in window[1:-1].split(" ") if not p.startswith("stride=")) + "}"
    from xlashapes.inference._common import window_dims, windowed_dimensions
    from xlashapes import parse_instruction, parse_shape

    typed = parse_instruction(f"r = f32[] x(), window={window}").attributes.typed("window")
    try:
        out, _ = windowed_dimensions(parse_shape(operand), window_dims(typed, rank, "w"), "w")
    except ValueError:
        out = tuple(static(sizes))
    source = shape(t, [str(s) for s in out])
    if draw(st.integers(0, 6)) == 0:
        source = shape(t, [str(s + 1) for s in out])
    select = producing((f"{t}[]", f"{t}[]"), "pred[]")
    return Case(op, (operand, source, f"{t}[]"), f"window={window}, select=sel, scatter=sc",
                (("sel", select), ("sc", scalar_reducer((t,)))))


@st.composite
def linalg_cases(draw: st.DrawFn) -> Case:
    op = draw(st.sampled_from(("cholesky", "triangular-solve", "fft", "batch-norm-training",
                               "batch-norm-inference", "batch-norm-grad")))
    t = draw(st.sampled_from(("f32", "f64", "c64", "s32", "bf16")))
    batch = draw(dims(rank=draw(st.integers(0, 2)), low=1))
    if op == "cholesky":
        n = draw(st.integers(1, 4))
        m = n if draw(st.integers(0, 5)) else n + 1
        return Case(op, (shape(t, [*batch, str(n), str(m)]),), "lower=true" if draw(st.booleans()) else "")
    if op == "triangular-solve":
        m, k = draw(st.integers(1, 4)), draw(st.integers(1, 4))
        left = draw(st.booleans())
        b = [*batch, str(m), str(k)] if left else [*batch, str(k), str(m)]
        if draw(st.integers(0, 6)) == 0:
            b[-1] = "7"
        attrs = f"left_side={'true' if left else 'false'}, lower=true, transpose_a=NO_TRANSPOSE"
        return Case(op, (shape(t, [*batch, str(m), str(m)]), shape(t, b)), attrs)
    if op == "fft":
        kind = draw(st.sampled_from(("FFT", "IFFT", "RFFT", "IRFFT")))
        k = draw(st.integers(1, 3))
        lengths = [draw(st.integers(1, 6)) for _ in range(k)]
        minor = [str(n) for n in lengths]
        if kind == "IRFFT" and draw(st.integers(0, 5)):
            minor[-1] = str(lengths[-1] // 2 + 1)
        if draw(st.integers(0, 8)) == 0:
            minor[0] = "9"
        return Case(op, (shape(t, [*batch, *minor]),),
                    f"fft_type={kind}, fft_length={{{','.join(map(str, lengths))}}}")
    sizes = [*batch, *draw(dims(rank=draw(st.integers(0, 2)), low=1))]
    feature = draw(st.integers(0, max(len(sizes) - 1, 0))) if draw(st.integers(0, 8)) else len(sizes)
    feat = sizes[feature] if feature < len(sizes) else "3"
    vector = shape(t, [feat.lstrip("<=")]) if draw(st.integers(0, 8)) else shape(t, ["9"])
    operand = shape(t, sizes)
    operands = {"batch-norm-training": (operand, vector, vector),
                "batch-norm-inference": (operand, vector, vector, vector, vector),
                "batch-norm-grad": (operand, vector, vector, vector, operand)}[op]
    return Case(op, operands, f"epsilon=0.001, feature_index={feature}")


@st.composite
def gather_cases(draw: st.DrawFn) -> Case:
    """Valid-by-construction gathers (with the occasional mutation)."""
    rank = draw(st.integers(1, 3))
    operand = [draw(st.integers(1, 5)) for _ in range(rank)]
    batching = sorted(draw(st.lists(st.integers(0, rank - 1), max_size=1, unique=True)))
    rest = [d for d in range(rank) if d not in batching]
    start_map = draw(st.lists(st.sampled_from(rest), min_size=1, max_size=len(rest), unique=True)) if rest else []
    collapsed = sorted(draw(st.lists(st.sampled_from(start_map), max_size=len(start_map), unique=True))) \
        if start_map else []
    slice_sizes = [1 if d in collapsed or d in batching else draw(st.integers(0, operand[d])) for d in range(rank)]
    index_batch = [draw(st.integers(1, 4)) for _ in range(draw(st.integers(0, 2)))]
    indices_batching: list[int] = []
    if batching:
        index_batch.insert(0, operand[batching[0]])
    ivd = draw(st.integers(0, len(index_batch)))
    indices = list(index_batch)
    indices.insert(ivd, len(start_map))
    if batching:
        indices_batching = [0 if ivd != 0 else 1]
    offset_count = rank - len(collapsed) - len(batching)
    out_rank = offset_count + len(index_batch)
    offset_dims = sorted(draw(st.lists(st.integers(0, out_rank - 1), min_size=offset_count, max_size=offset_count,
                                       unique=True))) if offset_count else []
    if draw(st.integers(0, 7)) == 0:
        slice_sizes[0] += 1
    if draw(st.integers(0, 9)) == 0:
        ivd = len(indices) if draw(st.booleans()) else ivd
    attrs = [f"offset_dims={{{','.join(map(str, offset_dims))}}}",
             f"collapsed_slice_dims={{{','.join(map(str, collapsed))}}}",
             f"start_index_map={{{','.join(map(str, start_map))}}}"]
    if batching:
        attrs += [f"operand_batching_dims={{{','.join(map(str, batching))}}}",
                  f"start_indices_batching_dims={{{','.join(map(str, indices_batching))}}}"]
    attrs += [f"index_vector_dim={ivd}", f"slice_sizes={{{','.join(map(str, slice_sizes))}}}"]
    t = draw(st.sampled_from(("f32", "s8", "pred")))
    return Case("gather", (shape(t, [str(d) for d in operand]), shape("s32", [str(d) for d in indices])),
                ", ".join(attrs))


@st.composite
def scatter_cases(draw: st.DrawFn) -> Case:
    """Valid-by-construction scatters (variadic sometimes), with the occasional mutation."""
    rank = draw(st.integers(1, 3))
    operand = [draw(st.integers(1, 5)) for _ in range(rank)]
    to_operand = draw(st.lists(st.integers(0, rank - 1), min_size=1, max_size=rank, unique=True))
    inserted = sorted(draw(st.lists(st.sampled_from(to_operand), max_size=len(to_operand), unique=True)))
    window_sizes = [draw(st.integers(0, operand[d])) for d in range(rank) if d not in inserted]
    index_batch = [draw(st.integers(1, 3)) for _ in range(draw(st.integers(0, 2)))]
    ivd = draw(st.integers(0, len(index_batch)))
    indices = list(index_batch)
    indices.insert(ivd, len(to_operand))
    update_rank = len(window_sizes) + len(index_batch)
    window_dims = sorted(draw(st.lists(st.integers(0, update_rank - 1), min_size=len(window_sizes),
                                       max_size=len(window_sizes), unique=True))) if window_sizes else []
    updates, w, b = [], iter(window_sizes), iter(index_batch)
    for i in range(update_rank):
        updates.append(next(w) if i in window_dims else next(b))
    if draw(st.integers(0, 7)) == 0 and updates:
        updates[0] += 1
    n = draw(st.integers(1, 2))
    types = tuple(draw(st.sampled_from(("f32", "s32"))) for _ in range(n))
    attrs = (f"update_window_dims={{{','.join(map(str, window_dims))}}}, "
             f"inserted_window_dims={{{','.join(map(str, inserted))}}}, "
             f"scatter_dims_to_operand_dims={{{','.join(map(str, to_operand))}}}, index_vector_dim={ivd}, "
             f"to_apply=red")
    operands = (*(shape(t, [str(d) for d in operand]) for t in types), shape("s32", [str(d) for d in indices]),
                *(shape(t, [str(d) for d in updates]) for t in types))
    return Case("scatter", operands, attrs, (("red", scalar_reducer(types)),))


@st.composite
def control_cases(draw: st.DrawFn) -> Case:
    op = draw(st.sampled_from(("tuple", "get-tuple-element", "while", "conditional", "call", "after-all",
                               "add-dependency", "partition-id", "replica-id")))
    a = shape(draw(st.sampled_from(ARRAY_TYPES)), draw(dims()))
    b = shape(draw(st.sampled_from(ARRAY_TYPES)), draw(dims()))
    if op == "tuple":
        return Case(op, tuple(draw(st.lists(st.sampled_from((a, b, "token[]", f"({a}, {b})")), max_size=4))))
    if op == "get-tuple-element":
        elements = draw(st.lists(st.sampled_from((a, b, f"({a})")), min_size=1, max_size=3))
        index = draw(st.integers(0, len(elements)))
        return Case(op, ("(" + ", ".join(elements) + ")",), f"index={index}")
    if op == "while":
        state = f"({a}, {b})" if draw(st.booleans()) else a
        body_result = state if draw(st.integers(0, 5)) else a.replace("[", "[1,", 1).replace(",]", "]")
        cond_result = "pred[]" if draw(st.integers(0, 5)) else "s32[]"
        return Case(op, (state,), "condition=cond, body=body",
                    (("cond", producing((state,), cond_result)), ("body", producing((state,), body_result))))
    if op == "conditional":
        n = draw(st.integers(1, 3))
        result = a if draw(st.integers(0, 5)) else None
        comps = []
        operands = []
        for i in range(n):
            param = draw(st.sampled_from((a, b)))
            operands.append(param)
            comps.append((f"br{i}", producing((param,), result or draw(st.sampled_from((a, b))))))
        if n == 2 and draw(st.booleans()):
            return Case(op, ("pred[]", *operands), "true_computation=br0, false_computation=br1", tuple(comps))
        index = "s32[]" if draw(st.integers(0, 5)) else "pred[]"
        names = ",".join(f"br{i}" for i in range(n))
        return Case(op, (index, *operands), f"branch_computations={{{names}}}", tuple(comps))
    if op == "call":
        params = tuple(draw(st.lists(st.sampled_from((a, b)), max_size=3)))
        operands = params if draw(st.integers(0, 5)) else (*params, a)
        return Case(op, operands, "to_apply=f", (("f", producing(params, b)),))
    if op == "after-all":
        return Case(op, tuple(draw(st.lists(st.sampled_from(("token[]", "token[]", a)), min_size=1, max_size=3))))
    if op == "add-dependency":
        return Case(op, (a, draw(st.sampled_from(("token[]", "token[]", b)))))
    return Case(op, ())


FAMILIES = {
    "unary": unary_cases(),
    "binary": binary_cases(),
    "ternary": ternary_cases(),
    "data movement": movement_cases(),
    "dot": dot_cases(),
    "convolution": convolution_cases(),
    "reduction": reduction_cases(),
    "linalg": linalg_cases(),
    "gather": gather_cases(),
    "scatter": scatter_cases(),
    "control": control_cases(),
}
