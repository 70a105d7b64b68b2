"""Tuples, control flow, calls, async wrappers, tokens, I/O and the ops whose shape is written, not inferred."""

from __future__ import annotations

from collections.abc import Sequence

from ..dtypes import ELEMENT_TYPES
from ..errors import ShapeError
from ..shape import Shape, token_shape
from ._common import PRED, S32, U32, Call, Signature, array_shape, compatible, like, text, tuple_of

U64 = ELEMENT_TYPES["u64"]


def tuple_op_shape(call: Call) -> Shape:
    """shape_inference.cc, InferVariadicOpShape for kTuple: a tuple of the operands' shapes.

    >>> from xlashapes import parse_shape
    >>> str(tuple_op_shape(Call("tuple", (parse_shape("f32[2]"), parse_shape("s32[]")), {}, {})))
    '(f32[2]{0}, s32[])'
    """
    return tuple_of(call.operands)


def get_tuple_element_shape(call: Call) -> Shape:
    """shape_inference.cc, InferGetTupleElementShape: element ``index`` of a tuple operand.

    >>> from xlashapes import parse_shape
    >>> str(get_tuple_element_shape(Call("get-tuple-element", (parse_shape("(f32[2], s32[])"),), {"index": 1}, {})))
    's32[]'
    """
    call.count(1)
    operand = call.operands[0]
    if not operand.is_tuple:
        raise ShapeError(f"get-tuple-element needs a tuple operand, got {text(operand)}")
    index = call.integer("index")
    if not 0 <= index < len(operand.tuple_shapes):
        raise ShapeError(f"get-tuple-element index {index} is out of range for {text(operand)}")
    return like(operand.tuple_shapes[index])


def _check_parameters(call: Call, signature: Signature, shapes: Sequence[Shape], what: str) -> None:
    if len(signature.parameters) != len(shapes):
        raise ShapeError(f"{call.opcode}: {what} takes {len(signature.parameters)} parameters, got "
                         f"{len(shapes)} operands")
    for i, (param, shape) in enumerate(zip(signature.parameters, shapes)):
        if not compatible(param, shape):
            raise ShapeError(f"{call.opcode}: {what} parameter {i} is {text(param)}, the operand is {text(shape)}")


def while_shape(call: Call) -> Shape:
    """shape_inference.cc, InferWhileShape: the init shape; body maps it to itself, condition to pred[].

    >>> from xlashapes import parse_shape
    >>> from xlashapes.inference import Signature
    >>> s = parse_shape("(s32[], f32[4])")
    >>> sigs = {"c": Signature((s,), parse_shape("pred[]")), "b": Signature((s,), s)}
    >>> str(while_shape(Call("while", (s,), {"condition": "c", "body": "b"}, sigs)))
    '(s32[], f32[4]{0})'
    """
    call.count(1)
    init = call.operands[0]
    condition, body = call.signature("condition"), call.signature("body")
    if len(condition.parameters) != 1:
        raise ShapeError(f"while's condition must take 1 parameter, takes {len(condition.parameters)}")
    if len(body.parameters) != 1:
        raise ShapeError(f"while's body must take 1 parameter, takes {len(body.parameters)}")
    result = condition.result
    if not (result.is_array and result.is_scalar and result.element_type == PRED):
        raise ShapeError(f"while's condition must return pred[], returns {text(result)}")
    for what, shape in (("condition parameter", condition.parameters[0]), ("body parameter", body.parameters[0]),
                        ("body result", body.result)):
        if not compatible(shape, init):
            raise ShapeError(f"while's {what} {text(shape)} differs from the init {text(init)}")
    return like(init)


def conditional_shape(call: Call) -> Shape:
    """shape_inference.cc, InferConditionalShape: every branch returns one shape; branch i takes operand i + 1.

    >>> from xlashapes import parse_shape
    >>> from xlashapes.inference import Signature
    >>> f = parse_shape("f32[2]")
    >>> sigs = {"t": Signature((f,), f), "e": Signature((f,), f)}
    >>> call = Call("conditional", (parse_shape("pred[]"), f, f), {"true_computation": "t", "false_computation": "e"},
    ...             sigs)
    >>> str(conditional_shape(call))
    'f32[2]{0}'
    """
    call.at_least(1)
    selector = call.array(0, "branch index")
    if "branch_computations" in call.attributes:
        names = call.get("branch_computations")
        names = (names,) if isinstance(names, str) else tuple(names)
        if not selector.is_scalar or selector.element_type != S32:
            raise ShapeError(f"conditional with branch_computations needs an s32[] branch index, got "
                             f"{text(selector)}")
    else:
        names = (call.get("true_computation"), call.get("false_computation"))
        if not selector.is_scalar or selector.element_type != PRED:
            raise ShapeError(f"conditional with true/false computations needs a pred[] selector, got "
                             f"{text(selector)}")
    if not names:
        raise ShapeError("conditional needs at least one branch")
    if len(call.operands) != len(names) + 1:
        raise ShapeError(f"conditional has {len(names)} branches and {len(call.operands) - 1} branch operands")
    result: Shape | None = None
    for i, name in enumerate(names):
        signature = call.named_signature(str(name), "branch_computations")
        _check_parameters(call, signature, (call.operands[i + 1],), f"branch {i}")
        if result is None:
            result = signature.result
        elif not compatible(signature.result, result):
            raise ShapeError(f"conditional branch {i} returns {text(signature.result)}, branch 0 {text(result)}")
    assert result is not None
    return like(result)


def call_shape(call: Call) -> Shape:
    """shape_inference.cc, InferCallShape: the called computation's root shape (fusion: ``calls=``).

    >>> from xlashapes import parse_shape
    >>> from xlashapes.inference import Signature
    >>> f = parse_shape("f32[2]")
    >>> str(call_shape(Call("call", (f, f), {"to_apply": "g"}, {"g": Signature((f, f), f)})))
    'f32[2]{0}'
    """
    key = "to_apply" if call.opcode == "call" or "to_apply" in call.attributes else "calls"
    signature = call.signature(key)
    _check_parameters(call, signature, call.operands, "the called computation")
    return like(signature.result)


def async_start_shape(call: Call) -> Shape:
    """hlo_instructions.cc, HloAsyncStartInstruction: ((operands...), the callee's result, s32[] context).

    >>> from xlashapes import parse_shape
    >>> from xlashapes.inference import Signature
    >>> f = parse_shape("f32[2]")
    >>> str(async_start_shape(Call("async-start", (f,), {"calls": "g"}, {"g": Signature((f,), f)})))
    '((f32[2]{0}), f32[2]{0}, s32[])'
    """
    signature = call.signature("calls")
    _check_parameters(call, signature, call.operands, "the async computation")
    return tuple_of([tuple_of(call.operands), signature.result, array_shape(S32, ())])


def async_done_shape(call: Call) -> Shape:
    """hlo_verifier.cc, HandleAsyncDone: element 1 of the async-start's tuple (the callee's result).

    >>> from xlashapes import parse_shape
    >>> str(async_done_shape(Call("async-done", (parse_shape("((f32[2]), f32[3], s32[])"),), {}, {})))
    'f32[3]{0}'
    """
    call.count(1)
    operand = call.operands[0]
    if not operand.is_tuple or len(operand.tuple_shapes) < 2:
        raise ShapeError(f"{call.opcode} takes the tuple an async start returns, got {text(operand)}")
    return like(operand.tuple_shapes[1])


def same_as_operand(call: Call) -> Shape:
    """Ops whose result is their (first) operand's shape: add-dependency, opt-barrier, async-update, domain.

    >>> from xlashapes import parse_shape
    >>> str(same_as_operand(Call("opt-barrier", (parse_shape("(f32[2], s32[])"),), {}, {})))
    '(f32[2]{0}, s32[])'
    """
    call.at_least(1)
    if call.opcode == "add-dependency":
        call.count(2)
    elif call.opcode in ("opt-barrier", "async-update", "domain"):
        call.count(1)
    return like(call.operands[0])


def token_result(call: Call) -> Shape:
    """after-all (tokens in), outfeed (value, token) and send-done: ``token[]``.

    >>> from xlashapes import parse_shape
    >>> str(token_result(Call("after-all", (parse_shape("token[]"),), {}, {})))
    'token[]'
    """
    if call.opcode == "outfeed":
        call.count(2)
        if not call.operands[1].is_token:
            raise ShapeError(f"outfeed's second operand must be a token, got {text(call.operands[1])}")
    elif call.opcode == "send-done":
        call.count(1)
        operand = call.operands[0]
        if not operand.is_tuple or len(operand.tuple_shapes) != 3:
            raise ShapeError(f"send-done takes the (data, u32[], token[]) tuple of a send, got {text(operand)}")
    return token_shape()


def check_tokens(call: Call, shape: Shape) -> None:
    """hlo_verifier.cc, HandleAfterAll / HandleAddDependency: the token operands are tokens.

    >>> from xlashapes import parse_shape
    >>> check_tokens(Call("after-all", (parse_shape("f32[]"),), {}, {}), parse_shape("token[]"))
    Traceback (most recent call last):
    ...
    xlashapes.errors.ShapeError: after-all takes tokens, operand 0 is f32[]
    """
    first = 1 if call.opcode == "add-dependency" else 0
    for i, operand in enumerate(call.operands[first:], first):
        if not operand.is_token:
            raise ShapeError(f"{call.opcode} takes tokens, operand {i} is {text(operand)}")


def id_shape(call: Call) -> Shape:
    """partition-id and replica-id: ``u32[]``.

    >>> str(id_shape(Call("replica-id", (), {}, {})))
    'u32[]'
    """
    call.count(0)
    return array_shape(U32, ())


def send_shape(call: Call) -> Shape:
    """hlo_instructions.cc, HloSendInstruction: (data, u32[] context, token[]) whatever shape is written.

    >>> from xlashapes import parse_shape
    >>> str(send_shape(Call("send", (parse_shape("f32[2]"), parse_shape("token[]")), {"channel_id": 1}, {})))
    '(f32[2]{0}, u32[], token[])'
    """
    call.count(2)
    if not call.operands[1].is_token:
        raise ShapeError(f"send's second operand must be a token, got {text(call.operands[1])}")
    return tuple_of([call.operands[0], array_shape(U32, ()), token_shape()])


def recv_done_shape(call: Call) -> Shape:
    """hlo_instructions.cc, HloRecvDoneInstruction: (data, token[]) from the recv's (data, u32[], token[]).

    >>> from xlashapes import parse_shape
    >>> str(recv_done_shape(Call("recv-done", (parse_shape("(f32[2], u32[], token[])"),), {}, {})))
    '(f32[2]{0}, token[])'
    """
    call.count(1)
    operand = call.operands[0]
    if not operand.is_tuple or len(operand.tuple_shapes) != 3:
        raise ShapeError(f"recv-done takes the (data, u32[], token[]) tuple of a recv, got {text(operand)}")
    return tuple_of([operand.tuple_shapes[0], token_shape()])


def copy_start_shape(call: Call) -> Shape:
    """hlo_instruction.cc, CreateCopyStart: (destination, source, u32[] context), both the operand's shape.

    >>> from xlashapes import parse_shape
    >>> str(copy_start_shape(Call("copy-start", (parse_shape("f32[2]"),), {}, {})))
    '(f32[2]{0}, f32[2]{0}, u32[])'
    """
    call.count(1)
    return tuple_of([call.operands[0], call.operands[0], array_shape(U32, ())])


def copy_done_shape(call: Call) -> Shape:
    """hlo_verifier.cc, HandleCopyDone: element 0 of the copy-start's tuple.

    >>> from xlashapes import parse_shape
    >>> str(copy_done_shape(Call("copy-done", (parse_shape("(f32[2], f32[2], u32[])"),), {}, {})))
    'f32[2]{0}'
    """
    call.count(1)
    operand = call.operands[0]
    if not operand.is_tuple or len(operand.tuple_shapes) < 2:
        raise ShapeError(f"copy-done takes the tuple of a copy-start, got {text(operand)}")
    return like(operand.tuple_shapes[0])


def rng_state_shape(call: Call) -> Shape:
    """rng-get-and-update-state: the ``u64[2]`` state.

    >>> str(rng_state_shape(Call("rng-get-and-update-state", (), {"delta": 1}, {})))
    'u64[2]{0}'
    """
    call.count(0)
    return array_shape(U64, (2,))


# ----- written shapes: what the verifier can still check ----------------------------------------------


def check_rng(call: Call, shape: Shape) -> None:
    """shape_inference.cc, InferRngShape checks: scalar parameters of the result's element type.

    >>> from xlashapes import parse_shape
    >>> s = parse_shape("f32[]")
    >>> check_rng(Call("rng", (s, s), {"distribution": "rng_uniform"}, {}), parse_shape("f32[3]"))
    """
    call.count(2)
    if not shape.is_array:
        raise ShapeError(f"rng makes an array, not {text(shape)}")
    for i, param in enumerate(call.operands):
        if not (param.is_array and param.is_scalar) or param.element_type != shape.element_type:
            raise ShapeError(f"rng parameter {i} must be a {shape.element_type} scalar, got {text(param)}")
    etype = shape.element_type
    distribution = call.word("distribution", "rng_uniform")
    if distribution == "rng_normal" and not etype.is_floating:
        raise ShapeError(f"rng with distribution=rng_normal makes floating-point values, not {etype}")
    if distribution == "rng_uniform" and not (etype.is_floating or etype.is_integral or etype.name == "pred"):
        raise ShapeError(f"rng with distribution=rng_uniform makes real or integer values, not {etype}")


def check_rng_bit_generator(call: Call, shape: Shape) -> None:
    """hlo_verifier.cc, HandleRngBitGenerator: (new state shaped like the state, an output array).

    >>> from xlashapes import parse_shape
    >>> check_rng_bit_generator(Call("rng-bit-generator", (parse_shape("u64[2]"),), {}, {}),
    ...                         parse_shape("(u64[2], u32[4,4])"))
    """
    call.count(1)
    state = call.array(0, "state")
    if not shape.is_tuple or len(shape.tuple_shapes) != 2:
        raise ShapeError(f"rng-bit-generator returns (state, values), not {text(shape)}")
    if not compatible(shape.tuple_shapes[0], state):
        raise ShapeError(f"rng-bit-generator's new state {text(shape.tuple_shapes[0])} differs from the state "
                         f"{text(state)}")
    algorithm = call.word("algorithm", "rng_default")
    sizes = {"rng_three_fry": ((2,),), "rng_philox": ((2,), (3,))}.get(algorithm)
    if sizes and (state.element_type.name != "u64" or state.dimensions not in sizes):
        wanted = " or ".join(f"u64[{s[0]}]" for s in sizes)
        raise ShapeError(f"rng-bit-generator with algorithm={algorithm} needs a {wanted} state, got {text(state)}")
    values = shape.tuple_shapes[1]
    if not values.is_array:
        raise ShapeError(f"rng-bit-generator makes an array of values, not {text(values)}")


def check_io(call: Call, shape: Shape) -> None:
    """infeed: (data, token[]) from a token; recv: (data, u32[], token[]) from a token.

    >>> from xlashapes import parse_shape
    >>> check_io(Call("infeed", (parse_shape("token[]"),), {}, {}), parse_shape("(f32[2], token[])"))
    """
    call.count(1)
    if not call.operands[0].is_token:
        raise ShapeError(f"{call.opcode} takes a token, got {text(call.operands[0])}")
    size = 2 if call.opcode == "infeed" else 3
    if not shape.is_tuple or len(shape.tuple_shapes) != size or not shape.tuple_shapes[-1].is_token:
        form = "(data, token[])" if size == 2 else "(data, u32[], token[])"
        raise ShapeError(f"{call.opcode} returns {form}, not {text(shape)}")


def scan_shape(call: Call) -> Shape:
    """hlo_parser.cc / shape_inference.cc for kScan: (stacked per-step outputs..., final carries...).

    Operands are the scanned inputs then ``num_carries`` initial carries; ``to_apply`` maps (slices..., carries...)
    to (outputs..., carries...); each output is stacked along ``dimensions`` with the scan length (observed on
    XLA's parser in jaxlib 0.10.2).

    >>> from xlashapes import parse_shape
    >>> from xlashapes.inference import Signature
    >>> f, x = parse_shape("f32[]"), parse_shape("f32[3]")
    >>> sigs = {"f": Signature((x, f), parse_shape("(f32[3], f32[])"))}
    >>> call = Call("scan", (parse_shape("f32[5,3]"), f), {"dimensions": (0,), "num_carries": 1, "to_apply": "f"}, sigs)
    >>> str(scan_shape(call))
    '(f32[5,3]{1,0}, f32[])'
    """
    call.at_least(1)
    dim = call.integer("dimensions")
    carries = call.integer("num_carries")
    if not 0 <= carries <= len(call.operands):
        raise ShapeError(f"scan num_carries={carries} does not fit its {len(call.operands)} operands")
    first = call.array(0, "input 0")
    if not 0 <= dim < first.rank:
        raise ShapeError(f"scan dimension {dim} is out of range for input {text(first)}")
    length, dynamic = first.dimensions[dim], first.dynamic_dimensions[dim]
    signature = call.signature("to_apply")  # XLA's parser does not compare its parameters with the operands
    results = signature.result.tuple_shapes if signature.result.is_tuple else (signature.result,)
    if len(results) < carries:
        raise ShapeError(f"scan's computation returns {len(results)} values, fewer than num_carries={carries}")
    stacked = []
    for y in results[:len(results) - carries]:
        if not y.is_array:
            raise ShapeError(f"scan's per-step outputs must be arrays, got {text(y)}")
        if dim > y.rank:
            raise ShapeError(f"scan dimension {dim} is out of range for the step output {text(y)}")
        stacked.append(array_shape(y.element_type, (*y.dimensions[:dim], length, *y.dimensions[dim:]),
                                   (*y.dynamic_dimensions[:dim], dynamic, *y.dynamic_dimensions[dim:])))
    return tuple_of([*stacked, *results[len(results) - carries:]])

