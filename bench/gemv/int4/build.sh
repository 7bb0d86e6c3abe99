set -e
# name spec bm bn bk stages wgmma arch
cfgs="c1:nk_z8:8:128:128:4:0:sm_90a
c2:nk_z8:64:128:128:3:1:sm_90a
c3:nk_z-3:64:64:128:4:1:sm_90a
c4:kn_z8:16:128:128:2:0:sm_90a
c5:kn_z8:32:128:128:3:1:sm_90a
c6:kn_z-3:32:64:128:4:1:sm_90a
c7:kn_z8:32:128:64:6:1:sm_90a
c8:nk_z-3:16:128:128:2:0:sm_90a
c9:nk_z8:16:128:128:5:0:c80
c10:kn_z-3:8:128:128:3:0:c80
c11:nk_z8:64:128:128:2:0:sm_90a
c12:kn_z8:64:128:128:2:0:sm_90a"
for c in $cfgs; do
  IFS=: read n sp bm bn bk st wg ar <<< "$c"
  ./gen $sp.spec gen_$n.cu $bm $bn $bk $st $wg 2>/dev/null
  if [ $ar = c80 ]; then A="-gencode arch=compute_80,code=compute_80"; else A="-gencode arch=compute_90a,code=sm_90a"; fi
  nvcc -std=c++17 -O2 $A -include gen_$n.cu harness.cu -o h_$n 2> err_$n.txt &
done
wait
for c in $cfgs; do n=${c%%:*}; ls h_$n >/dev/null 2>&1 && echo "$n built" || { echo "$n FAILED"; head -5 err_$n.txt; }; done
