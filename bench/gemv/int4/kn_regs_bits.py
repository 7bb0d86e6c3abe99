# Session 62 review (a helper): an independent bit-level check of the K x N register form on random packed bytes:
# nibble_kn_fragments (packed slot, permuted ldmatrix.x2.trans, pair_scaled selectors / fp32 words) against
# expand_chunk + w8_kn_fragments on the expanded tile, both conversion routes, every warp, k16 step and lane.
# `python3 kn_regs_bits.py`.
import random
NT=KT=128; KRT=2
def bp(x,y,s):
    b=[(x>>(8*i))&255 for i in range(4)]+[(y>>(8*i))&255 for i in range(4)]
    return sum(b[(s>>(4*i))&7]<<(8*i) for i in range(4))  # (no sign-replicate mode bits used)
def rd(mem,a,n): return int.from_bytes(bytes(mem[a:a+n]),'little')
def ldsm_trans(mem, addrs, nmat):
    # addrs[lane] for lanes 0..8*nmat-1; PTX: .trans -> thread T gets (row 2(T%4), col T/4),(row 2(T%4)+1, col T/4)
    out=[[0]*nmat for _ in range(32)]
    for m in range(nmat):
        for T in range(32):
            g,t=T>>2,T&3
            e0=rd(mem,addrs[8*m+2*t]+2*g,2); e1=rd(mem,addrs[8*m+2*t+1]+2*g,2)
            out[T][m]=e0|(e1<<16)
    return out
def col_of(w,rt,r): return w*16*KRT+16*rt+2*(r&7)+(r>>3)
random.seed(1)
G=[random.randrange(256) for _ in range(64*128)]  # global packed: G[kpair*128+n]
# packed slot as written by cp.async (packed_offset, K x N regs form)
slot=[0]*8192
for ci in range(8192//16):
    row,ch=ci>>3,ci&7
    off=row*128+((ch^(row&7))<<4)
    slot[off:off+16]=G[row*128+16*ch:row*128+16*ch+16]
# expand path: slot at ci*16 (packed_offset else-branch), expand_chunk into 8-bit tile, wswz chunk^(row&7)
slot0=[0]*8192
for ci in range(512):
    row,ch=ci>>3,ci&7; slot0[ci*16:ci*16+16]=G[row*128+16*ch:row*128+16*ch+16]
tile=[0]*(128*128)
for ci in range(512):
    row,ch=ci>>3,ci&7
    v=slot0[ci*16:ci*16+16]
    for r,vals in ((2*row,[b&15 for b in v]),(2*row+1,[b>>4 for b in v])):
        o=r*128+((ch^(r&7))<<4); tile[o:o+16]=vals
MASK=0x000f000f
for w in range(4):
  for s in range(8):
    # w8_kn_fragments
    A=[0]*32
    for lane in range(32):
        mat=lane>>3; row=16*s+(lane&7)+8*(mat&1); A[lane]=row*128+(((KRT*w+(mat>>1))^(row&7))<<4)
    R8=ldsm_trans(tile,A,4)
    # nibble_kn_fragments
    B=[0]*32
    for lane in range(32):
        i=lane&7; row=8*s+(i>>1)+4*(i&1); ch=KRT*w+((lane>>3)&1); B[lane]=row*128+((ch^(row&7))<<4)
    R4=ldsm_trans(slot,B,2)
    for lane in range(32):
      g,t=lane>>2,lane&3
      for rt in range(2):
        lo,hi=R8[lane][2*rt],R8[lane][2*rt+1]
        ref_pair=[(bp(lo,lo,0x3210)&MASK,0),(bp(lo,lo,0x3311)&MASK,1),(bp(hi,hi,0x3210)&MASK,0),(bp(hi,hi,0x3311)&MASK,1)]
        r=R4[lane][rt]; h=r>>4
        new_pair=[(bp(r,h,0x0400)&MASK,0),(bp(r,h,0x0501)&MASK,1),(bp(r,h,0x0602)&MASK,0),(bp(r,h,0x0703)&MASK,1)]
        assert ref_pair==new_pair,(w,s,lane,rt,ref_pair,new_pair)
        # fp32 route: element pairs + scale index
        fl=[(lo>>(8*j))&255 for j in range(4)]; fh=[(hi>>(8*j))&255 for j in range(4)]
        ref=[(fl[0],fl[2],0),(fl[1],fl[3],1),(fh[0],fh[2],0),(fh[1],fh[3],1)]
        x=bp(r,h,0x5140)&0x0F0F0F0F; y=bp(r,h,0x7362)&0x0F0F0F0F
        f01=[(x>>(8*j))&255 for j in range(4)]; f23=[(y>>(8*j))&255 for j in range(4)]
        new=[(f01[0],f01[1],0),(f01[2],f01[3],1),(f23[0],f23[1],0),(f23[2],f23[3],1)]
        assert ref==new,(w,s,lane,rt,ref,new)
        # semantic: a0 = (col 2g -> col_of(g)), k 16s+2t, +1
        n=col_of(w,rt,g); k=16*s+2*t
        def nib(k,n): b=G[(k>>1)*128+n]; return (b>>4) if k&1 else b&15
        assert new[0][:2]==(nib(k,n),nib(k+1,n)) and new[3][:2]==(nib(k+8,col_of(w,rt,g+8)),nib(k+9,col_of(w,rt,g+8)))
    # bank check for the x2 phases
    for m in range(2):
        assert len({(B[8*m+i]//16)%8 for i in range(8)})==8
print("independent: K x N nibble fragments == expand+w8 fragments, both routes, all w/s/lanes")
