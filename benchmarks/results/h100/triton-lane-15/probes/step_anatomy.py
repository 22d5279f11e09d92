import sys, time, statistics, collections, torch
sys.path.insert(0, "src")
import rnnbench.nn as rnn_nn
def host_us(fn, n=300):
    for _ in range(20): fn()
    torch.cuda.synchronize(); ts=[]
    for i in range(n):
        t=time.perf_counter(); fn(); ts.append(time.perf_counter()-t)
        if i%5==4: torch.cuda.synchronize()
    return 1e6*statistics.median(ts)
def sync_us(fn, n=300):
    for _ in range(20): fn()
    ts=[]
    for i in range(n):
        torch.cuda.synchronize(); t=time.perf_counter(); fn(); torch.cuda.synchronize(); ts.append(time.perf_counter()-t)
    return 1e6*statistics.median(ts)
torch.backends.cuda.matmul.allow_tf32=False; torch.backends.cudnn.allow_tf32=False
dev="cuda"
for cell,B,H in [("lstm",20,100),("gru",32,128),("rnn",20,100)]:
    T=30; lstm=cell=="lstm"
    for lane in ["torch","triton"]:
        torch.manual_seed(0)
        cls={"lstm":rnn_nn.LSTM,"gru":rnn_nn.GRU,"rnn":rnn_nn.RNN}[cell]
        m=cls(H,H,backend=lane).to(dev)
        x=torch.randn(T,B,H,device=dev,requires_grad=True); h0=torch.randn(1,B,H,device=dev,requires_grad=True); c0=torch.randn(1,B,H,device=dev,requires_grad=True)
        tgt=torch.randn(T,B,H,device=dev); th=torch.randn(1,B,H,device=dev)
        leaves=[x,h0,c0] if lstm else [x,h0]; params=list(m.parameters())
        hx=(h0,c0) if lstm else h0
        def fwd_ng():
            with torch.no_grad(): return m(x,hx)
        def fwd(): return m(x,hx)
        def fwd_loss():
            out,hn=m(x,hx); fin=hn if lstm else (hn,)
            l=((out-tgt)**2).sum()
            for f in fin: l=l+((f-th)**2).sum()
            return l
        def step(): return torch.autograd.grad(fwd_loss(), leaves+params)
        r={k:host_us(f) for k,f in [("fwd_nograd",fwd_ng),("fwd",fwd),("fwd+loss",fwd_loss),("step",step)]}
        r["step_sync"]=sync_us(step)
        from torch.profiler import profile, ProfilerActivity
        with profile(activities=[ProfilerActivity.CPU,ProfilerActivity.CUDA]) as p:
            for _ in range(5): step()
            torch.cuda.synchronize()
        ev=p.events()
        launches=sum(1 for e in ev if e.name in("cudaLaunchKernel","cuLaunchKernel","cuLaunchKernelEx","cudaLaunchKernelExC"))/5
        kern=collections.Counter(e.name[:60] for e in ev if e.device_type.name=="CUDA")
        print(f"{cell} B{B} H{H} {lane}: " + " ".join(f"{k}={v:.0f}" for k,v in r.items()) + f" launches/step={launches:.0f} kernels/step={sum(kern.values())/5:.0f}")
        if lane=="triton" or cell=="lstm":
            for k,v in kern.most_common(14): print(f"     {v/5:5.1f} {k}")
