"""fxfuse::gemm_chain on CPU (the reference kernel): every chain kind against a float64 eager
reference, the Meta kernel and opcheck, and the op's input errors."""

import pytest
import torch

import fxfuse._C  # noqa: F401  (registers torch.ops.fxfuse.gemm_chain)
from runtime_chain_cases import CASES, DTYPES, SpecBuilder, check_outputs, per_op_rounding_chain, randn

gemm_chain = torch.ops.fxfuse.gemm_chain.default
SHAPES = [(1, 8, 16), (17, 24, 40), (64, 33, 130)]  # (M, N, K), not multiples of anything


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda t: str(t).split(".")[-1])
@pytest.mark.parametrize("kind", sorted(CASES))
def test_chain_matches_eager(kind, dtype, shape):
    case = CASES[kind](dtype, "cpu", *shape)
    check_outputs(case, gemm_chain(case.inputs, case.spec), dtype)


def test_strided_inputs():
    """Non-contiguous views (a sliced activation, a transposed weight view) are read right."""
    case = CASES["linear_gelu_tanh"](torch.bfloat16, "cpu", 12, 10, 24)
    x = randn((12, 48), torch.bfloat16, "cpu")[:, ::2]
    w = randn((24, 10), torch.bfloat16, "cpu", 24 ** -0.5).t()  # [N, K] view of a [K, N]
    case.inputs[0], case.inputs[1] = x, w
    check_outputs(case, gemm_chain(case.inputs, case.spec), torch.bfloat16)


def test_outputs_do_not_alias_inputs():
    s = SpecBuilder()
    x, w = s.input(torch.float32, "mk"), s.input(torch.float32, "kn")
    r = s.input(torch.float32, "mn")
    s.mm(x, w, torch.float32)
    s.output(r)
    ins = [torch.randn(3, 4), torch.randn(4, 5), torch.randn(3, 5)]
    (out,) = gemm_chain(ins, s.text())
    assert torch.equal(out, ins[2]) and out.data_ptr() != ins[2].data_ptr()


def test_output_listed_twice_is_two_tensors():
    s = SpecBuilder()
    x, w = s.input(torch.float32, "mk"), s.input(torch.float32, "kn")
    y = s.op("relu", s.mm(x, w, torch.float32), dtype=torch.float32)
    s.output(y, y)
    a, b = gemm_chain([torch.randn(3, 4), torch.randn(4, 5)], s.text())
    assert torch.equal(a, b) and a.data_ptr() != b.data_ptr()


def test_rounding_per_op_is_bit_exact():
    spec, inputs, expected = per_op_rounding_chain("cpu")
    (out,) = gemm_chain(inputs, spec)
    assert torch.equal(out.view(torch.int16), expected.view(torch.int16))


_F = torch.nn.functional
# name -> (spec op, its constant arguments, what eager called): unary ops, then ops with scalars
EAGER_CALLS = {name: (name, [], fn) for name, fn in {
    "neg": torch.neg, "abs": torch.abs, "reciprocal": torch.reciprocal, "sqrt": torch.sqrt,
    "rsqrt": torch.rsqrt, "exp": torch.exp, "log": torch.log, "tanh": torch.tanh, "erf": torch.erf,
    "sigmoid": torch.sigmoid, "sin": torch.sin, "cos": torch.cos, "relu": torch.relu, "gelu": _F.gelu,
    "gelu_tanh": lambda x: _F.gelu(x, approximate="tanh"), "silu": _F.silu, "hardswish": _F.hardswish}.items()}
EAGER_CALLS.update({
    "pow_half": ("pow", [0.5], lambda x: x ** 0.5), "pow_minus_half": ("pow", [-0.5], lambda x: x ** -0.5),
    "pow_3": ("pow", [3.0], lambda x: x ** 3), "pow_minus_2": ("pow", [-2.0], lambda x: x ** -2),
    "leaky_relu": ("leaky_relu", [0.1], lambda x: _F.leaky_relu(x, 0.1)),
    "clamp": ("clamp", [-1.5, 2.0], lambda x: torch.clamp(x, -1.5, 2.0)),
    "hardtanh": ("hardtanh", [-1.0, 1.0], lambda x: _F.hardtanh(x, -1.0, 1.0)),
    "add_scalar": ("add", [0.745867], lambda x: x + 0.745867), "sub_scalar": ("sub", [0.745867], lambda x: x - 0.745867),
    "mul_scalar": ("mul", [0.745867], lambda x: x * 0.745867), "div_scalar": ("div", [0.745867], lambda x: x / 0.745867)})


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["f16", "bf16"])
@pytest.mark.parametrize("op", sorted(EAGER_CALLS))
def test_unary_op_on_16bit_values_is_eagers_bit_for_bit(op, dtype):
    """BUG-6: ATen's Half/BFloat16 CPU kernels are not round(Float kernel) everywhere (f16
    gelu(+inf) is +inf, the Float kernel's NaN; bf16 erf(1e-8) is 0; sqrt, rsqrt differ by a
    step at some values; f16 pow(-inf, 0.5) is +inf, not NaN; 16-bit add and sub round a
    Python scalar to the tensor's type first), and eager runs the 16-bit ones (with Python
    scalars for pow's exponent, the slope, the bounds, the other addend). The product is exact (K = 1, w = 1), so
    the op sees eager's values, specials included; NaN positions and every other bit must agree."""
    special = torch.tensor([float("inf"), float("-inf"), float("nan"), 0.0, -0.0, 1e-8, -1e-8, 2e-7,
                            65504.0, -65504.0, 88.7, -88.7, -4.5, 3.998, 112.375, 0.486])
    wide = torch.randn(512) * 2.0 ** torch.randint(-30, 16, (512,)).float()
    x = torch.cat([special, torch.randn(512) * 4, wide]).to(dtype)[:, None]  # [M, 1]
    s = SpecBuilder()
    xs, ws = s.input(dtype, "mk"), s.input(dtype, "kn")
    name, consts, eager = EAGER_CALLS[op]
    s.output(s.op(name, s.mm(xs, ws, dtype), *[s.const(c) for c in consts], dtype=dtype))
    w = torch.ones(1, 1, dtype=dtype)
    (got,) = gemm_chain([x, w], s.text())
    want = eager(torch.mm(x, w))
    assert torch.equal(torch.isnan(got), torch.isnan(want)), op
    keep = ~torch.isnan(want)
    assert torch.equal(got[keep].view(torch.int16), want[keep].view(torch.int16)), op


def test_outputs_contiguous_and_shaped_like_eager():
    case = CASES["lead_3d"](torch.float32, "cpu", 12, 8, 16)
    (out,) = gemm_chain(case.inputs, case.spec)
    assert out.shape == (4, 3, 8) and out.is_contiguous()


# ---- Meta / fake tensors / opcheck ----------------------------------------------------------

@pytest.mark.parametrize("kind", ["bias_gelu", "int8_weight_only", "bmm_bias", "lead_3d",
                                  "extra_outputs", "broadcasts", "activations_mix"])
def test_opcheck(kind):
    case = CASES[kind](torch.bfloat16, "cpu", 6, 8, 16)
    torch.library.opcheck(gemm_chain, (case.inputs, case.spec),
                          test_utils=("test_schema", "test_faketensor", "test_aot_dispatch_dynamic"))


def test_opcheck_autograd_registration():
    case = CASES["residual"](torch.float32, "cpu", 6, 8, 16)
    inputs = [case.inputs[0].requires_grad_()] + case.inputs[1:]
    torch.library.opcheck(gemm_chain, (inputs, case.spec), test_utils=("test_autograd_registration",))


def test_meta_shapes_are_symbolic():
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.experimental.symbolic_shapes import ShapeEnv

    case = CASES["lead_3d"](torch.float16, "cpu", 12, 8, 16)
    with FakeTensorMode(shape_env=ShapeEnv()) as mode:
        fake = [mode.from_tensor(t, static_shapes=False) for t in case.inputs]
        (out,) = gemm_chain(fake, case.spec)
    assert out.dtype == torch.float16 and out.dim() == 3
    assert any(isinstance(s, torch.SymInt) for s in out.shape)


def test_torch_compile_traces_the_op():
    case = CASES["bias_gelu"](torch.float32, "cpu", 5, 6, 7)
    fn = torch.compile(lambda ins: gemm_chain(ins, case.spec), backend="aot_eager", fullgraph=True)
    check_outputs(case, fn(case.inputs), torch.float32)


def test_grad_inputs_run_forward_and_refuse_backward():
    case = CASES["silu"](torch.float32, "cpu", 4, 5, 6)
    case.inputs[0].requires_grad_()
    (out,) = gemm_chain(case.inputs, case.spec)
    assert out.requires_grad
    with pytest.raises(RuntimeError, match="not differentiable"):
        out.sum().backward()
    with torch.no_grad():
        (out,) = gemm_chain(case.inputs, case.spec)
    assert not out.requires_grad


# ---- errors ---------------------------------------------------------------------------------

def _case():
    return CASES["bias_gelu"](torch.bfloat16, "cpu", 4, 6, 8)


def test_error_wrong_input_count():
    c = _case()
    with pytest.raises(RuntimeError, match="takes 3 inputs, got 2"):
        gemm_chain(c.inputs[:2], c.spec)


def test_error_wrong_dtype():
    c = _case()
    c.inputs[2] = c.inputs[2].float()
    with pytest.raises(RuntimeError, match="input 2 has dtype Float but the spec expects bf16"):
        gemm_chain(c.inputs, c.spec)


def test_error_wrong_rank():
    c = _case()
    c.inputs[2] = c.inputs[2][None]
    with pytest.raises(RuntimeError, match=r"input 2 has shape \[1, 6\] but the spec gives it dims \[n\]"):
        gemm_chain(c.inputs, c.spec)


def test_error_shape_mismatch():
    c = _case()
    c.inputs[1] = c.inputs[1][:7]  # K = 7 against A's K = 8
    with pytest.raises(RuntimeError, match=r"input 1 has shape \[7, 6\].*must be 8"):
        gemm_chain(c.inputs, c.spec)


def test_error_bad_spec():
    c = _case()
    with pytest.raises(RuntimeError, match="invalid spec: line 1"):
        gemm_chain(c.inputs, "fxfuse.chain v9\n")


def test_error_device_mismatch():
    c = _case()
    c.inputs[2] = c.inputs[2].to("meta")
    with pytest.raises(RuntimeError, match="all inputs must be on one device"):
        gemm_chain(c.inputs, c.spec)


# ---- bindings ---------------------------------------------------------------------------------

def test_bindings_report_state(tmp_path):
    C = fxfuse._C
    st = C.stats()
    for key in ("launches", "fallbacks", "aten_dispatch", "kernels_compiled", "memory_hits",
                "disk_hits", "disk_rebuilds", "cpu_calls", "cluster_launches", "pdl_launches", "pdl_launch_refusals", "hopper_split_k_launches",
                "hopper_overlap_launches", "compiler_crashes",
                "call_cache_hits"):
        assert key in st and isinstance(st[key], int), key
    C.reset_stats()
    assert all(v == 0 for k, v in C.stats().items() if k != "specs_parsed")
    assert isinstance(C.library_version(), str) and C.library_version()
    old = C.cache_dir()
    try:
        C.set_cache_dir(str(tmp_path))
        assert C.cache_dir() == str(tmp_path)
    finally:
        C.set_cache_dir(old)
    assert isinstance(C.nvrtc_available(), bool)
    assert isinstance(C.cuda_driver_available(), bool)


def test_cpu_calls_counted():
    before = fxfuse._C.stats()["cpu_calls"]
    c = _case()
    gemm_chain(c.inputs, c.spec)
    assert fxfuse._C.stats()["cpu_calls"] == before + 1


def test_generate_cuda_dump():
    src_name, code = fxfuse._C.generate_cuda(_case().spec, 128, 256, 64, "sm_90")
    assert src_name in code and "fx_epilogue" in code


@pytest.mark.skipif(not fxfuse._C.nvrtc_available(), reason="NVRTC not found")
def test_compile_ptx_dump():
    ptx = fxfuse._C.compile_ptx(_case().spec, 64, 64, 64, "sm_80")
    assert ".entry" in ptx


@pytest.mark.slow
@pytest.mark.skipif(not fxfuse._C.nvrtc_available(), reason="NVRTC not found")
@pytest.mark.parametrize("shape", [(1, 4096, 4096), (256, 512, 1024)], ids=["gemv", "tiles"])
@pytest.mark.parametrize("kind", sorted(CASES))
def test_every_chain_compiles_for_sm90(kind, shape):
    """Pre-flight for the GPU tests, without a GPU: the kernel each chain would launch on an
    H200 compiles with NVRTC (what the GPU test picks for these shapes)."""
    case = CASES[kind](torch.bfloat16, "cpu", 4, 4, 4)
    M, N, K = shape
    assert ".entry" in fxfuse._C.compile_ptx(case.spec, M, N, K, "sm_90")


def test_outputs_have_contiguous_strides_in_size_one_dims():
    """N = 1: the op's result must carry the strides its Meta kernel declares, (1, 1), also
    where the last op's result could be handed back without a copy (strides (1, M) are
    'contiguous' for is_contiguous() but not what the graph was traced with)."""
    spec = ("fxfuse.chain v1\ngemm mm\n%0 = input 0 f32 [m,k]\n%1 = input 1 f32 [k,n]\n"
            "%2 = mm %0 %1 : f32\n%3 = relu %2 : f32\noutput %3\n")
    x = torch.randn(5, 7)
    for w in (torch.randn(7, 1), torch.randn(1, 7).t()):
        (y,) = gemm_chain([x, w], spec)
        assert y.shape == (5, 1) and y.stride() == (1, 1), y.stride()
        torch.testing.assert_close(y, torch.relu(x @ w))


# The mark `addmm` (docs/spec.md): the value eager computed in one addmm / baddbmm call, which the CPU kernel makes;
# the same ops unmarked are an mm and then a mul and an add, two or three calls in eager.
ADDMM_HEAD = "fxfuse.chain v1\ngemm {gemm}\n%0 = input 0 {t} [{a}]\n%1 = input 1 {t} [{b}]\n%2 = mm %0 %1 : f32\n"
ADDMM_TAILS = {
    "bias": ("%3 = input 2 {t} [{bias}]\n%4 = add %2 %3 : {t}{mark}\noutput %4\n", 1.0, 1.0),
    "alpha_beta": ("%3 = const 1.5 : f32\n%4 = mul %2 %3 : f32\n%5 = input 2 {t} [{bias}]\n%6 = const 0.5 : f32\n"
                   "%7 = mul %5 %6 : f32\n%8 = add %4 %7 : {t}{mark}\noutput %8\n", 1.5, 0.5),
    "alpha_only": ("%3 = const 1.7 : f32\n%4 = mul %2 %3 : {t}{mark}\noutput %4\n", 1.7, 0.0),
}


def _addmm_case(tail, dtype, gemm, marked):
    text, alpha, beta = ADDMM_TAILS[tail]
    t = {torch.float32: "f32", torch.bfloat16: "bf16", torch.float16: "f16"}[dtype]
    bmm = gemm == "bmm"
    spec = (ADDMM_HEAD + text).format(gemm=gemm, t=t, a="b,m,k" if bmm else "m,k", b="b,k,n" if bmm else "k,n",
                                      bias="b,1,n" if bmm else "n", mark=" addmm" if marked else "")
    lead = (3,) if bmm else ()
    M, K, N = 64, 512, 96
    x = randn(lead + (M, K), dtype, "cpu")
    w = randn(lead + (K, N), dtype, "cpu", K ** -0.5)
    bias = randn(lead + (1, N) if bmm else (N,), dtype, "cpu")
    inputs = [x, w] + ([bias] if tail != "alpha_only" else [])
    call = torch.baddbmm if bmm else torch.addmm
    eager = call(bias, x, w, beta=beta, alpha=alpha)
    return spec, inputs, eager


@pytest.mark.parametrize("gemm", ["mm", "bmm"])
@pytest.mark.parametrize("tail", sorted(ADDMM_TAILS))
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16], ids=lambda t: str(t).split(".")[-1])
def test_a_value_marked_addmm_is_eagers_one_call(dtype, tail, gemm):
    spec, inputs, eager = _addmm_case(tail, dtype, gemm, marked=True)
    (out,) = gemm_chain(inputs, spec)
    assert out.dtype == eager.dtype and torch.equal(out, eager), f"{int((out != eager).sum())} of {out.numel()} differ"


def test_the_same_ops_unmarked_are_separate_calls():
    """In f32 the mark alone tells addmm from `x @ w + b`; unmarked, the chain rounds as the ops are written, and so
    (the premise) differs from the one call here."""
    spec, inputs, eager = _addmm_case("bias", torch.float32, "mm", marked=False)
    x, w, bias = inputs
    (out,) = gemm_chain(inputs, spec)
    assert torch.equal(out, torch.mm(x, w) + bias)
    assert not torch.equal(out, eager)


def test_a_16bit_addmm_printed_before_the_mark_is_still_one_call():
    """A spec printed before the mark (a rewritten program saved then) keeps its reading: a 16-bit add of its own type
    reading the f32 product and a bias along n is eager's addmm, told by the types (session 57)."""
    spec, inputs, eager = _addmm_case("bias", torch.bfloat16, "mm", marked=False)
    (out,) = gemm_chain(inputs, spec)
    assert torch.equal(out, eager)


def test_an_addmm_of_a_constant_bias():
    """A bias the pass read as a number (a 0-d constant tensor) is the call's bias too."""
    spec = ("fxfuse.chain v1\ngemm mm\n%0 = input 0 f32 [m,k]\n%1 = input 1 f32 [k,n]\n%2 = mm %0 %1 : f32\n"
            "%3 = const 0.25 : f32\n%4 = add %2 %3 : f32 addmm\noutput %4\n")
    x, w = randn((64, 512), torch.float32, "cpu"), randn((512, 96), torch.float32, "cpu")
    (out,) = gemm_chain([x, w], spec)
    assert torch.equal(out, torch.addmm(torch.tensor(0.25), x, w))
