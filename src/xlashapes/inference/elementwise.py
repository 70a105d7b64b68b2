"""Element-wise ops: unary, binary, compare, select, clamp, conversions, complex parts, map-free arithmetic."""

from __future__ import annotations

from ..broadcast import broadcast_shape
from ..dtypes import ELEMENT_TYPES, ElementType, ml_dtypes_module
from ..errors import ShapeError
from ..shape import UNBOUNDED_SIZE, Shape
from ._common import PRED, Call, array_shape, like, same_dimensions, text

_FLOAT_ONLY = frozenset({"floor", "ceil", "round-nearest-afz", "round-nearest-even", "erf", "cbrt"})
_FLOAT_OR_COMPLEX = frozenset("""cosine sine exponential exponential-minus-one log log-plus-one logistic rsqrt sqrt
tanh tan acos asin atanh acosh asinh cosh sinh""".split())
_INTEGRAL = frozenset({"count-leading-zeros", "popcnt"})
UNARY_OPCODES = frozenset(_FLOAT_ONLY | _FLOAT_OR_COMPLEX | _INTEGRAL | {
    "abs", "negate", "sign", "not", "is-finite", "real", "imag", "copy", "domain"})
BINARY_OPCODES = frozenset("""add subtract multiply divide remainder power maximum minimum atan2 and or xor shift-left
shift-right-arithmetic shift-right-logical complex mulhi compare""".split())
_LOGICAL = frozenset({"and", "or", "xor"})
_ARITHMETIC = frozenset({"subtract", "divide", "remainder", "power", "atan2", "shift-left", "shift-right-arithmetic",
                         "shift-right-logical"})
_COMPONENT = {"c64": "f32", "c128": "f64"}
COMPARISON_DIRECTIONS = frozenset({"EQ", "NE", "LT", "LE", "GT", "GE"})


def complex_component(etype: ElementType) -> ElementType:
    """The real type of a complex type (c64 -> f32, c128 -> f64).

    >>> str(complex_component(ELEMENT_TYPES["c64"]))
    'f32'
    """
    return ELEMENT_TYPES[_COMPONENT[etype.name]]



def _precision_key(etype: ElementType) -> tuple[bool, int, int, int, bool]:
    """primitive_util::HigherPrecisionType's order: complex, float range, float precision, width, signedness."""
    component = complex_component(etype) if etype.is_complex else etype
    exponent = significand = -1
    if component.is_floating:
        info = ml_dtypes_module().finfo(component.numpy_dtype)
        exponent, significand = int(info.maxexp), int(info.nmant) + 1
    return (etype.is_complex, exponent, significand, component.bits, component.kind == "signed")


def higher_precision(a: ElementType, b: ElementType) -> ElementType:
    """XLA's ShapeUtil::HigherPrecisionElementType: more range, then more precision, then more bits.

    >>> str(higher_precision(ELEMENT_TYPES["f16"], ELEMENT_TYPES["bf16"]))
    'bf16'
    """
    if a == b:
        return a
    return a if _precision_key(a) >= _precision_key(b) else b


def unary_shape(call: Call) -> Shape:
    """shape_inference.cc, InferUnaryOpShape: the operand's shape (pred for is-finite, real for abs/real/imag).

    >>> from xlashapes import parse_shape
    >>> str(unary_shape(Call("abs", (parse_shape("c64[3]"),), {}, {})))
    'f32[3]{0}'
    """
    op = call.opcode
    call.count(1)
    if op in ("copy", "domain"):
        return like(call.operands[0])
    shape = call.array(0)
    etype = shape.element_type

    def fail(wanted: str) -> ShapeError:
        return ShapeError(f"{op} expects {wanted} elements, got {etype} ({text(shape)})")

    if op in _FLOAT_ONLY:
        if not etype.is_floating:
            raise fail("floating-point")
    elif op in _FLOAT_OR_COMPLEX:
        if not (etype.is_floating or etype.is_complex):
            raise fail("floating-point or complex")
    elif op in _INTEGRAL:
        if not etype.is_integral:
            raise fail("integral")
    elif op in ("real", "imag", "abs"):
        if etype.is_complex:
            return like(shape, complex_component(etype))
        if op == "abs" and not (etype.is_signed or etype.is_floating):
            raise fail("signed, floating-point or complex")
        if op != "abs" and not etype.is_floating:
            raise fail("floating-point or complex")
    elif op == "negate":
        if not (etype.is_integral or etype.is_floating or etype.is_complex):
            raise fail("integral, floating-point or complex")
    elif op == "sign":
        if not (etype.is_signed or etype.is_floating or etype.is_complex):
            raise fail("signed, floating-point or complex")
    elif op == "not":
        if not (etype.is_integral or etype.name == "pred"):
            raise fail("pred or integral")
    elif op == "is-finite":
        if not etype.is_floating:
            raise fail("floating-point")
        return like(shape, PRED)
    return like(shape)


def binary_shape(call: Call) -> Shape:
    """shape_inference.cc, InferBinaryOpShape (+ InferElementwiseBinaryOpShape): broadcast of equal-rank operands.

    >>> from xlashapes import parse_shape
    >>> call = Call("compare", (parse_shape("f32[2,<=3]"), parse_shape("f32[2,3]")), {"direction": "LT"}, {})
    >>> str(binary_shape(call))
    'pred[2,<=3]{1,0}'
    """
    op = call.opcode
    call.count(2)
    lhs, rhs = call.array(0, "lhs"), call.array(1, "rhs")
    a, b = lhs.element_type, rhs.element_type
    if a != b and not (a.is_floating and b.is_floating and op != "complex"):
        raise ShapeError(f"{op} needs operands of one element type, got {a} and {b}")
    if op in _LOGICAL and not (a.is_integral or a.name == "pred"):
        raise ShapeError(f"{op} expects pred or integral operands, got {a}")
    if op == "atan2" and not (a.is_floating or a.is_complex):
        raise ShapeError(f"atan2 expects floating-point or complex operands, got {a}")
    if op in _ARITHMETIC and a.name == "pred":
        raise ShapeError(f"{op} expects arithmetic operands, got {a}")
    if op == "complex" and a.name not in ("f32", "f64"):
        raise ShapeError(f"complex expects f32 or f64 operands, got {a}")
    if op == "compare":
        direction = call.word("direction")
        if direction not in COMPARISON_DIRECTIONS:
            raise ShapeError(f"compare has unknown direction {direction!r}")
    dims = _dims(call, lhs, rhs)
    if op == "compare":
        etype = PRED
    elif op == "complex":
        etype = ELEMENT_TYPES["c64" if a.name == "f32" else "c128"]
    else:
        etype = higher_precision(a, b)
    return array_shape(etype, dims.dimensions, dims.dynamic_dimensions)


def _dims(call: Call, lhs: Shape, rhs: Shape) -> Shape:
    """The broadcast dims of two operands (HLO gives no broadcast_dimensions: ranks must agree or one is a scalar)."""
    if lhs.rank != rhs.rank and lhs.rank and rhs.rank:
        raise ShapeError(f"{call.opcode} operands {text(lhs)} and {text(rhs)} have different ranks; HLO needs an "
                         f"explicit broadcast")
    try:
        result: Shape = broadcast_shape(lhs, Shape(lhs.element_type, rhs.dimensions, rhs.dynamic_dimensions))
    except ShapeError as error:
        raise ShapeError(f"{call.opcode}: {error}") from None
    return result


def ternary_shape(call: Call) -> Shape:
    """shape_inference.cc, InferTernaryOpShape (InferSelectShape, InferClampShape).

    >>> from xlashapes import parse_shape
    >>> s = parse_shape("f32[4]")
    >>> str(ternary_shape(Call("clamp", (parse_shape("f32[]"), s, parse_shape("f32[]")), {}, {})))
    'f32[4]{0}'
    """
    call.count(3)
    a, b, c = call.arrays()
    if call.opcode == "select":
        if a.element_type.name != "pred":
            raise ShapeError(f"select's predicate must be pred, got {text(a)}")
        if not _same_ignoring_fp(b, c):
            raise ShapeError(f"select's on_true {text(b)} and on_false {text(c)} differ")
        if not (a.is_scalar or same_dimensions(a, b)):
            raise ShapeError(f"select's predicate {text(a)} does not match the on_true shape {text(b)}")
        return _select_dims(a, b, c)
    # clamp(min, operand, max): min and max may be scalars
    for bound, name in ((a, "min"), (c, "max")):
        if bound.element_type != b.element_type and not (bound.element_type.is_floating and b.element_type.is_floating):
            raise ShapeError(f"clamp's {name} {text(bound)} and operand {text(b)} have different element types")
        if not (bound.is_scalar or same_dimensions(bound, b)):
            raise ShapeError(f"clamp's {name} {text(bound)} must be a scalar or match the operand {text(b)}")
    return like(b)  # XLA keeps the operand's dims as they are (min/max dynamism is not carried)


def _same_ignoring_fp(a: Shape, b: Shape) -> bool:
    same_type = a.element_type == b.element_type or (a.element_type.is_floating and b.element_type.is_floating)
    return same_type and same_dimensions(a, b)


def _select_dims(pred: Shape, on_true: Shape, on_false: Shape) -> Shape:
    """shape_inference.cc, InferSelectShape: the predicate's dims; where a value is ``?``, the more specific one."""
    first = pred if pred.rank == on_true.rank else on_true
    dims, flags = list(first.dimensions), list(first.dynamic_dimensions)
    for i, (t, f) in enumerate(zip(on_true.dimensions, on_false.dimensions)):
        if UNBOUNDED_SIZE in (t, f):
            source = on_false if t == UNBOUNDED_SIZE else on_true
            dims[i], flags[i] = source.dimensions[i], source.dynamic_dimensions[i]
        else:
            flags[i] = flags[i] or on_true.dynamic_dimensions[i] or on_false.dynamic_dimensions[i]
    return array_shape(higher_precision(on_true.element_type, on_false.element_type), dims, flags)


def convert_shape(operand: Shape, new_type: ElementType) -> Shape:
    """shape_inference.cc, InferConvertShape: the operand's dims with ``new_type``.

    >>> from xlashapes import parse_shape
    >>> str(convert_shape(parse_shape("f32[2]"), ELEMENT_TYPES["s8"]))
    's8[2]{0}'
    """
    if not operand.is_array or not new_type.is_array_type:
        raise ShapeError(f"convert works on arrays, not {text(operand)} to {new_type}")
    return like(operand, new_type)


def bitcast_convert_shape(operand: Shape, new_type: ElementType) -> Shape:
    """shape_inference.cc, InferBitcastConvertShape: a narrower type adds a minor dim, a wider one removes it.

    >>> from xlashapes import parse_shape
    >>> str(bitcast_convert_shape(parse_shape("f32[2]"), ELEMENT_TYPES["u8"]))
    'u8[2,4]{1,0}'
    """
    old = operand.element_type
    if old.is_complex != new_type.is_complex:
        raise ShapeError(f"bitcast-convert cannot convert between complex and real types ({old} to {new_type})")
    if not operand.is_array or not new_type.is_array_type:
        raise ShapeError(f"bitcast-convert works on arrays, not {text(operand)} to {new_type}")
    old_bits, new_bits = old.bits, new_type.bits
    if max(old_bits, new_bits) % min(old_bits, new_bits):
        raise ShapeError(f"bitcast-convert between {old} and {new_type}: bit widths do not divide")
    ratio = max(old_bits, new_bits) // min(old_bits, new_bits)
    dims, flags = list(operand.dimensions), list(operand.dynamic_dimensions)
    if old_bits > new_bits:
        dims.append(ratio)
        flags.append(False)
    elif old_bits < new_bits:
        if not dims or dims[-1] != ratio:
            raise ShapeError(f"bitcast-convert from {text(operand)} to {new_type} needs a last dimension of {ratio}")
        dims.pop()
        flags.pop()
    return array_shape(new_type, dims, flags)


def stochastic_convert_shape(operand: Shape, random: Shape, new_type: ElementType) -> Shape:
    """shape_inference.cc, InferStochasticConvertShape: float operand, unsigned random bits of the same width.

    >>> from xlashapes import parse_shape
    >>> str(stochastic_convert_shape(parse_shape("f32[2]"), parse_shape("u32[2]"), ELEMENT_TYPES["s8"]))
    's8[2]{0}'
    """
    if not (operand.is_array and random.is_array):
        raise ShapeError("stochastic-convert takes arrays")
    if random.element_type.kind != "unsigned":
        raise ShapeError(f"stochastic-convert's random numbers must be unsigned integers, got {text(random)}")
    if not operand.element_type.is_floating:
        raise ShapeError(f"stochastic-convert converts floating-point values, got {text(operand)}")
    if operand.element_type.bits != random.element_type.bits:
        raise ShapeError(f"stochastic-convert's random numbers need {operand.element_type.bits} bits, got "
                         f"{text(random)}")
    if operand.dimensions != random.dimensions or operand.dynamic_dimensions != random.dynamic_dimensions:
        raise ShapeError(f"stochastic-convert's operand {text(operand)} and random numbers {text(random)} differ")
    return like(operand, new_type)


def reduce_precision_shape(call: Call) -> Shape:
    """shape_inference.cc, InferReducePrecisionShape: the operand's shape; exponent_bits >= 1, mantissa_bits >= 0.

    >>> from xlashapes import parse_shape
    >>> attrs = {"exponent_bits": 5, "mantissa_bits": 2}
    >>> str(reduce_precision_shape(Call("reduce-precision", (parse_shape("f32[2]"),), attrs, {})))
    'f32[2]{0}'
    """
    call.count(1)
    shape = call.array(0)
    if not shape.element_type.is_floating:
        raise ShapeError(f"reduce-precision expects floating-point elements, got {text(shape)}")
    if call.integer("exponent_bits") < 1:
        raise ShapeError("reduce-precision needs exponent_bits >= 1")
    if call.integer("mantissa_bits") < 0:
        raise ShapeError("reduce-precision needs mantissa_bits >= 0")
    return like(shape)
