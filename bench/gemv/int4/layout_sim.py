import itertools
def run(kmajor, NT, KT, wgmma):
    T=128; WB=1; E=16
    WRow = 128 if kmajor else NT*WB
    kNk = False
    def wswz(row, ch):
        if kmajor and not kNk and not wgmma: return ch ^ ((row&1)<<2)
        elif WRow == 64: return ch ^ ((row>>1)&3)
        else: return ch ^ (row&7)
    WS = NT*KT*WB; PB = WS//2; PCh = PB//16//T
    assert PCh*16*T == PB
    # int8 reference location of (k,n) byte
    ref = {}
    for ci in range(WS//16):
        if kmajor: row=ci>>3; ch=ci&7; n=row; k=ch*E
        else: cpr=WRow//16; row=ci//cpr; ch=ci%cpr; k=row; n=ch*E
        for e in range(16):
            kk = k+e if kmajor else k; nn = n if kmajor else n+e
            ref[(kk,nn)] = row*WRow + wswz(row,ch)*16 + e
    assert len(ref)==WS and sorted(ref.values())==list(range(WS))
    # packed loader: chunk ci -> global (k,n) of its 16 bytes
    got = {}
    nch = PB//16
    for ci in range(nch):
        if kmajor: row=ci//(KT//32); ch=ci%(KT//32); n=row; k=32*ch
        else: row=ci//(WRow//16); ch=ci%(WRow//16); k=2*row; n=16*ch
        # bytes of packed chunk: byte j
        byte_kn = []
        for j in range(16):
            if kmajor: byte_kn.append(((k+2*j, n),(k+2*j+1,n)))
            else: byte_kn.append(((k, n+j),(k+1, n+j)))
        # expand_chunk
        if kmajor:
            prow, pch = row, ch
            # e[2j] = bytes lo0 hi0 lo1 hi1 of word j ; e[2j+1] = lo2 hi2 lo3 hi3
            out=[]
            for j in range(4):
                w=[byte_kn[4*j+q] for q in range(4)]
                out += [w[0][0],w[0][1],w[1][0],w[1][1]]
                out += [w[2][0],w[2][1],w[3][0],w[3][1]]
            at = prow*WRow
            for idx,kn in enumerate(out):
                c = 2*pch + idx//16
                got[kn] = (at + wswz(prow,c)*16 + idx%16, ci)
        else:
            r0,r1 = 2*row, 2*row+1
            for j in range(16):
                got[byte_kn[j][0]] = (r0*WRow + wswz(r0,ch)*16 + j, ci)
                got[byte_kn[j][1]] = (r1*WRow + wswz(r1,ch)*16 + j, ci)
    assert len(got)==WS
    bad = [kn for kn in ref if got[kn][0]!=ref[kn]]
    assert not bad, (kmajor,NT,KT,wgmma,bad[:4])
    # (session 61's in-place expansion also needed the first half of the chunks to expand below the packed half;
    # session 62 expands into a tile buffer of its own, so that no longer applies)
    # every chunk is one thread's: tid + i*T for i < PCh covers them once
    s = sorted(t+i*T for t in range(T) for i in range(PCh))
    assert s == list(range(nch))
    # global addr contiguity: packed chunk's 16 bytes contiguous in global memory given contig stride 1
    print("ok", kmajor, NT, KT, wgmma, "PCh", PCh)
for cfg in [(True,128,128,False),(True,128,128,True),(True,64,128,True),(False,128,128,False),(False,128,128,True),(False,64,128,True),(False,128,64,True)]:
    run(*cfg)
