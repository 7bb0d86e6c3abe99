# One device call (session 63): the packed int4 gemv's rule (session 62's register form beside three CTAs per SM, never
# run through the tests), its zero point tensors (FXFUSE_GEMV_ZERO_TENSOR=1: AWQ's / HQQ's `(q - z) * s`, new) and the
# ragged-K padding mend, through the int4 / group-wise / demo GPU tests (the int4 file's bit-exact one-hot test
# included: the gemv's dequantized weight against eager's, bit for bit, each product and both conversions), the
# bit-level harness of bench/gemv/int4, then issue 7's decode table for the int4 chains (constant and tensor zero points)
# beside the group-wise int8 one (one and 16 rows: the call is sized for a budget cut by refused starts).
# From the repository root of the device's copy: `bash bench/gemv/int4_zero_tensor_check.sh`.
export FXFUSE_GEMV_ZERO_TENSOR=1
HARNESS_KN=${HARNESS_KN:-0} DECODE_M=${DECODE_M:-1,16} BENCH_LIMIT_S=${BENCH_LIMIT_S:-110} \
  DECODE_CHAINS=${DECODE_CHAINS:-w8g_linear_bias,w4g_bias,w4g_linear_bias,w4z_bias,w4z_linear_bias} \
  INT4_TESTS_LIMIT_S=${INT4_TESTS_LIMIT_S:-230} source bench/gemv/int4_rule_check.sh
