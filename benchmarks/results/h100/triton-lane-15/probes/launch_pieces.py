import sys, time, statistics, cProfile, pstats, torch
sys.path.insert(0, "src")
from rnnbench.ops import recurrence as R
def host_us(fn, n=500):
    for _ in range(20): fn()
    torch.cuda.synchronize(); ts=[]
    for i in range(n):
        t=time.perf_counter(); fn(); ts.append(time.perf_counter()-t)
        if i%5==4: torch.cuda.synchronize()
    return 1e6*statistics.median(ts)
torch.backends.cuda.matmul.allow_tf32=False
dev="cuda"
for cell,B,H,dt in [("lstm",20,100,torch.float32),("lstm",32,512,torch.bfloat16)]:
    T=30; G=4
    x=torch.randn(T,B,H,device=dev,dtype=dt); w_ih=torch.randn(G*H,H,device=dev,dtype=dt); w_hh=torch.randn(G*H,H,device=dev,dtype=dt)
    b=torch.randn(G*H,device=dev,dtype=dt); h0=torch.randn(B,H,device=dev,dtype=dt); c0=torch.randn(B,H,device=dev,dtype=dt)
    launch=R.layer_launch(cell,B,H,dt,x.device)
    print(cell,B,H,dt,launch.forward)
    xp=torch.mm(x.reshape(T*B,-1), w_ih.t()).view(T,B,-1)
    r={}
    r["_layer_forward"]=host_us(lambda: R._layer_forward(x,h0,c0,w_ih,w_hh,b,b,cell,launch,False))
    r["recurrence_forward"]=host_us(lambda: R.recurrence_forward(cell,xp,w_hh,b,b,h0,c0,launch,False))
    r["_counters"]=host_us(lambda: R._counters(4, x.device))
    r["mm"]=host_us(lambda: torch.mm(x.reshape(T*B,-1), w_ih.t()))
    # one launch with fixed args: capture the args the launcher sees
    seen={}
    orig=R._LSTM_FORWARD.__call__
    class Spy:
        def __call__(s, grid, *a, stream=None, **k): seen.update(grid=grid,a=a,stream=stream,k=k); R._LSTM_FORWARD_REAL(grid,*a,stream=stream,**k)
    R._LSTM_FORWARD_REAL=R._LSTM_FORWARD; R._LSTM_FORWARD=Spy()
    R.recurrence_forward(cell,xp,w_hh,b,b,h0,c0,launch,False); R._LSTM_FORWARD=R._LSTM_FORWARD_REAL
    L=R._LSTM_FORWARD
    r["KernelLauncher call"]=host_us(lambda: L(seen["grid"],*seen["a"],stream=seen["stream"],**seen["k"]))
    key=next(iter(L._compiled)); kern,tail=L._compiled[key]
    g=(*seen["grid"],1,1)[:3]
    r["compiled[grid](...)"]=host_us(lambda: kern[g](*seen["a"],*tail,stream=seen["stream"]))
    runner=kern[g]
    r["runner(...)"]=host_us(lambda: runner(*seen["a"],*tail,stream=seen["stream"]))
    print(" ".join(f"{k}={v:.1f}" for k,v in r.items()), "nargs", len(seen["a"])+len(tail), flush=True)
    pr=cProfile.Profile(); pr.enable()
    for _ in range(1000): R._layer_forward(x,h0,c0,w_ih,w_hh,b,b,cell,launch,False)
    pr.disable(); pstats.Stats(pr).sort_stats("tottime").print_stats(14)
