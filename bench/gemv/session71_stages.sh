# One device call (session 71): deeper pipelines for 16-bit weights at 1-16 rows. Nsight (session71_profile.sh) had
# cuBLAS's M = 1 kernel at 4096 x 4096 (nvjet 64x8, 64 CTAs) holding 164 KB of shared memory a CTA, the gemv (64 CTAs
# at the H100's S = 2) 87 KB (five 17 KB stages; the rule's most is six): with one CTA an SM, the bytes in flight an
# SM set its bandwidth. (1) the rule against 7 and 8 stages (FXFUSE_GEMV_STAGE_KB=120 / 150: 7 / 8 stages at one row, 6 / 8 at 16; the knob now reaches the
# kernel's 8), two rounds in alternating processes; (2) the 16-bit / decode GPU tests with the knob at 150 (every gemv
# they run at its deepest pipeline; outputs poisoned and checked). From the device copy's root:
# `bash bench/gemv/session71_stages.sh` (~350 s on a fresh machine). If 8 stages win at every shape:
# `git apply bench/gemv/ab/deep_pipeline_rule.patch` (the rule, its CPU tests' expectations updated; CTest 393/393).
source bench/gemv/device_call.sh
device_build
nvidia-smi --query-gpu=name --format=csv,noheader
device_sweep stages 1,16 bias "0:0,120:0,150:0" "${SWEEP_LIMIT_S:-150}" 4096x4096,14336x4096,4096x14336
FXFUSE_GEMV_STAGE_KB=150 device_pytest "wgmma_product_of_16bit or gemv_dense or decode" 12 "${TESTS_LIMIT_S:-90}"
device_pack
tail -14 "$L/sweep_stages.txt" | cut -c1-200
