"""The chains of bench/bench_chains.py as the op's specs (docs/spec.md): bf16, `x @ w` (B is
[K, N]), every value as the pass writes it. Shared by the SASS statistics and the tile comparison."""
HEAD = "fxfuse.chain v1\ngemm mm\n%0 = input 0 bf16 [m,k]\n%1 = input 1 bf16 [k,n]\n%2 = mm %0 %1 : f32\n"
CHAINS = {
    "bias_gelu": HEAD + "%3 = input 2 bf16 [n]\n%4 = add %2 %3 : bf16\n%5 = gelu_tanh %4 : bf16\noutput %5\n",
    "silu": HEAD + "%3 = convert %2 : bf16\n%4 = silu %3 : bf16\noutput %4\n",
    "bias_relu_cast": HEAD + "%3 = input 2 bf16 [n]\n%4 = add %2 %3 : bf16\n%5 = relu %4 : bf16\n"
                      "%6 = convert %5 : f16\noutput %6\n",
    "bias_gelu_resid": HEAD + "%3 = input 2 bf16 [n]\n%4 = add %2 %3 : bf16\n%5 = gelu_tanh %4 : bf16\n"
                       "%6 = input 3 bf16 [m,n]\n%7 = add %5 %6 : bf16\noutput %7\n",
}
