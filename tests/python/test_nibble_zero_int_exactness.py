"""kernels/gemv.cuh's FX_B_ZERO_INT (hooks.cpp detectNibbleScale's zero_integer): with an 8-bit integer zero point
tensor the packed 16-bit conversion computes a nibble's n - z as one fma, (magic + n) * 1 + -(magic + z), in place of
n exactly then n + -z. Exhaustively over every nibble and every zero point range the hooks allow (-128..127 in f16
and bf16, 0..255 in f16: hooks.cpp reads the range from the convert's result), the fma's exact real result rounded to the type must be n - z, bit for bit the old route's: -(magic + z) must be
exact in the type (pack2 rounds it), and the difference must round to itself. bf16 with a u8 zero point is refused
because 128 + z is not exact there above 256 (checked too)."""
import torch

MAGIC = {torch.float16: 1024, torch.bfloat16: 128}


def rounded(values, dtype):
    """float64 values rounded (RNE) to dtype, back as float64: the fma2's single rounding of an exact result."""
    return values.to(dtype).double()


def one_fma_and_old_route(dtype, zeros):
    n = torch.arange(16, dtype=torch.float64)[:, None]
    z = zeros.double()[None, :]
    magic = MAGIC[dtype]
    neg_magic_z = rounded(-(magic + z), dtype)  # pack2(-(magic + z))
    one_fma = rounded((magic + n) + neg_magic_z, dtype)  # fma2(v, 1, nz2): exact real sum, rounded once
    old = rounded(rounded(n, dtype) + rounded(-z, dtype), dtype)  # fma2(v, 1, -magic) = n; fma2(n, 1, -z)
    return neg_magic_z, one_fma, old, n - z, -(magic + z)


def test_integer_zero_points_the_hooks_allow_subtract_exactly_in_one_fma():
    i8 = torch.arange(-128, 128)
    u8 = torch.arange(0, 256)
    for dtype, zeros in ((torch.float16, i8), (torch.bfloat16, i8), (torch.float16, u8)):
        neg_magic_z, one_fma, old, exact, exact_neg = one_fma_and_old_route(dtype, zeros)
        assert torch.equal(neg_magic_z, exact_neg), dtype
        assert torch.equal(one_fma, exact), dtype
        # the same bits as the two-fma route (signs of zero included: n == z gives +0 in both)
        assert torch.equal(one_fma.to(dtype).view(torch.int16), old.to(dtype).view(torch.int16)), dtype


def test_bf16_with_u8_zero_points_would_not_be_exact():
    # why hooks.cpp leaves bf16 with a u8 zero point on the two-fma route: 128 + z rounds above 256
    neg_magic_z, one_fma, _, exact, exact_neg = one_fma_and_old_route(torch.bfloat16, torch.arange(0, 256))
    assert not torch.equal(neg_magic_z, exact_neg)
    assert not torch.equal(one_fma, exact)
