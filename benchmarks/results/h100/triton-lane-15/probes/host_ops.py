import time, statistics, torch, triton, triton.language as tl
def host_us(fn, n=400):
    for _ in range(20): fn()
    torch.cuda.synchronize()
    ts=[]
    for i in range(n):
        t=time.perf_counter(); fn(); ts.append(time.perf_counter()-t)
        if i%10==9: torch.cuda.synchronize()
    return 1e6*statistics.median(ts)
dev='cuda'
@triton.jit
def k(a_ptr, b_ptr, c_ptr, d_ptr, e_ptr, f_ptr, N, BLOCK: tl.constexpr):
    o=tl.program_id(0)*BLOCK+tl.arange(0,BLOCK); m=o<N
    tl.store(b_ptr+o, tl.load(a_ptr+o,mask=m), mask=m)
rows=[]
for name,dt,tf in [("fp32-strict",torch.float32,False),("tf32",torch.float32,True),("bf16",torch.bfloat16,False)]:
    torch.backends.cuda.matmul.allow_tf32=tf
    a=torch.randn(600,100,device=dev,dtype=dt); w=torch.randn(400,100,device=dev,dtype=dt); g=torch.randn(600,400,device=dev,dtype=dt)
    r={"case":name}
    r["mm x@w.t"]=host_us(lambda: torch.mm(a,w.t()))
    r["g.t()@a (dW)"]=host_us(lambda: g.t()@a)
    r["g@w (dx)"]=host_us(lambda: g@w)
    r["sum(0,f32)"]=host_us(lambda: g.sum(0,dtype=torch.float32))
    r["clone"]=host_us(lambda: w.clone())
    r["empty"]=host_us(lambda: torch.empty(30,20,400,device=dev,dtype=dt))
    r["zeros"]=host_us(lambda: torch.zeros(20,100,device=dev,dtype=dt))
    b=torch.empty_like(a)
    cache={}
    def tri():
        if "k" not in cache: cache["k"]=k[(4,)](a,b,a,b,a,b,a.numel(),BLOCK=1024); return
        cache["k"][(4,1,1)](a,b,a,b,a,b,a.numel(),1024)
    r["triton compiled launch"]=host_us(tri)
    r["triton jit launch"]=host_us(lambda: k[(4,)](a,b,a,b,a,b,a.numel(),BLOCK=1024))
    rows.append(r)
print(torch.__version__, torch.cuda.get_device_name(), torch.backends.cuda.preferred_blas_library())
keys=list(rows[0])
print(" | ".join(keys))
for r in rows: print(" | ".join(f"{r[k]:.1f}" if isinstance(r[k],float) else r[k] for k in keys))
