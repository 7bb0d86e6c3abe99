# Session 62 review (a helper): the packed 16-bit conversion of nibbles (kernels/gemv.cuh pair_scaled, FX_B_SCALE_IN_ELEM)
# against eager, in float64 models of the roundings: (1) x = (magic | n) - (magic + z) is exactly n - z for every
# n 0..15 and z -128..128 (elem_bits_of_int's constant), bf16 and f16; (2) the byte selectors; (3) one rounding of
# x * s to the 16-bit type equals eager's fp32 product then cast, for every x in -128..143 and every non-NaN 16-bit
# scale (subnormals, overflow, -0 included). `python3 pair_scaled_exactness.py` (numpy; ~10 s).
import numpy as np, itertools
def elem_bits_of_int(c, half):
    e=0
    while (2<<e) <= c: e+=1
    if c==0: return 0
    if half: return ((15+e)<<10) | ((c << (10-e)) & 0x3ff)
    return ((127+e)<<7) | (((c<<(7-e)) if e<=7 else (c>>(e-7))) & 0x7f)
def dec(bits, half):
    if half: return float(np.array(bits,dtype=np.uint16).view(np.float16))
    return float(np.array(bits<<16,dtype=np.uint32).view(np.float32))
def byte_perm(x,y,s):
    b = list((x | (y<<32)).to_bytes(8,'little'))
    return int.from_bytes(bytes(b[(s>>(4*i))&7] for i in range(4)),'little')
# format params
F = {True:(11,-14,15,65504.0), False:(8,-126,127,float(np.array(0x7f7f0000,dtype=np.uint32).view(np.float32)))}
def rn(v, half):  # exact float64 array -> RNE in format, returns float64 (inf on overflow); zeros keep sign
    p,emin,emax,mx = F[half]
    v=np.asarray(v,dtype=np.float64); out=v.copy()
    nz=(v!=0)&np.isfinite(v)
    a=np.abs(v[nz]); e=np.floor(np.log2(a)); e=np.maximum(e,emin)
    # fix log2 inaccuracies
    e=np.where(2.0**e> a, e-1, e); e=np.maximum(e,emin)
    q=2.0**(e-p+1); r=np.rint(v[nz]/q)*q
    r=np.where(np.abs(r)>mx, np.copysign(np.inf,r), r)
    out[nz]=r; return out
# step 1: the x = n - z bit path, exhaustive
bad=0
for half in (True,False):
    magic = 1024 if half else 128
    magic2 = 0x64006400 if half else 0x43004300
    for z in range(-128,129):
        c = magic+z
        zb = (0x8000 | elem_bits_of_int(c,half))
        assert dec(zb,half) == -float(c) or (c==0 and zb==0x8000), (half,z,hex(zb))
        for n in range(16):
            v = (n & 0xf) | (magic2 & 0xffff)
            vv = dec(v,half); assert vv == magic+n
            x = rn(np.array([vv*1.0 + dec(zb,half)]),half)[0]
            if x != n - z or (x==0 and np.signbit(x)): bad+=1; print('x',half,z,n,x)
print('step1 bad', bad)
# selectors: expanded bytes, check bytes 0,2 after perm & mask
w = 0x0d0c0b0a  # bytes a,b,c,d
for sel,exp in [(0x3210,(0x0a,0x0c)),(0x3311,(0x0b,0x0d)),(0x3120,(0x0a,0x0b)),(0x1302,(0x0c,0x0d))]:
    b = byte_perm(w,w,sel) & 0x000f000f
    assert (b & 0xff, (b>>16)&0xff) == exp, hex(sel)
print('selectors ok')
# step 2: round(x*s) vs eager fp32 then to E, all s patterns
xs = np.arange(-128,144,dtype=np.float64)
for half in (True,False):
    pats = np.arange(65536,dtype=np.uint32)
    s = (pats.astype(np.uint16).view(np.float16).astype(np.float64) if half
         else (pats<<16).view(np.float32).astype(np.float64))
    fin = ~np.isnan(s)
    s=s[fin]
    X,S = np.meshgrid(xs,s,indexing='ij')
    prod = X*S  # exact in float64 (<=19 bits)
    # kernel: one rounding of exact product; zero: (+0 * s) + (-0)
    ker = rn(prod,half)
    zero = prod==0
    ker[zero] = np.where(np.signbit(prod[zero]), -0.0, 0.0)  # (-0)+(-0)=-0, (+0)+(-0)=+0
    # eager: fp32 product then cast
    p32 = (X.astype(np.float32)*S.astype(np.float32))
    if half: eag = p32.astype(np.float16).astype(np.float64)
    else:
        u = p32.view(np.uint32).astype(np.uint64)
        r = ((u + 0x7fff + ((u>>16)&1))>>16).astype(np.uint32)
        eag = (r<<16).view(np.float32).astype(np.float64)
    nan_k=np.isnan(ker); nan_e=np.isnan(eag)
    diff = ~((ker==eag)&(np.signbit(ker)==np.signbit(eag)) | (nan_k&nan_e))
    print('half' if half else 'bf16', 'mismatches', diff.sum(), 'of', diff.size)
    if diff.sum(): 
        i=np.argwhere(diff)[:5]
        for a,b in i: print(X[a,b],S[a,b],ker[a,b],eag[a,b])
