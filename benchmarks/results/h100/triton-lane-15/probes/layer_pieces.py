import sys, time, statistics, gc, torch
sys.path.insert(0, "src")
import rnnbench.nn as rnn_nn
from rnnbench.ops import recurrence as R
def host_us(fn, n=300, keep=False):
    for _ in range(20): fn()
    torch.cuda.synchronize(); ts=[]; kept=[]
    for i in range(n):
        t=time.perf_counter(); r=fn(); 
        if keep: kept.append(r)
        ts.append(time.perf_counter()-t); del r
        if i%5==4: torch.cuda.synchronize(); kept.clear()
    return 1e6*statistics.median(ts)
torch.backends.cuda.matmul.allow_tf32=False; torch.backends.cudnn.allow_tf32=False
dev="cuda"; T,B,H=30,20,100
print("gc thresholds", gc.get_threshold())
torch.manual_seed(0)
ours=rnn_nn.LSTM(H,H,backend="triton").to(dev); ref=rnn_nn.LSTM(H,H,backend="torch").to(dev)
x=torch.randn(T,B,H,device=dev,requires_grad=True); h0=torch.randn(1,B,H,device=dev,requires_grad=True); c0=torch.randn(1,B,H,device=dev,requires_grad=True)
tgt=torch.randn(T,B,H,device=dev)
class Ident(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a): return a.view_as(a)
    @staticmethod
    def backward(ctx, g): return g
w=list(ours.parameters())
launch=R.layer_launch("lstm",B,H,torch.float32,x.device)
xs=x.detach()
class D(dict):
    def __setitem__(s,k,v): print(f"{k:32s} {v:8.1f}", flush=True); super().__setitem__(k,v)
res=D()
res["ident apply keep"]=host_us(lambda: Ident.apply(x), keep=True)
res["ident apply free"]=host_us(lambda: Ident.apply(x))
res["run_layer nograd"]=host_us(lambda: R._layer_forward(xs,h0[0].detach(),c0[0].detach(),*[p.detach() for p in w],"lstm",launch,False))
res["RecurrentLayer.apply keep"]=host_us(lambda: R.RecurrentLayer.apply(x,h0[0],c0[0],*w,"lstm",launch,True), keep=True)
res["RecurrentLayer.apply free"]=host_us(lambda: R.RecurrentLayer.apply(x,h0[0],c0[0],*w,"lstm",launch,True))
res["ours module keep"]=host_us(lambda: ours(x,(h0,c0)), keep=True)
res["ours module free"]=host_us(lambda: ours(x,(h0,c0)))
res["torch module keep"]=host_us(lambda: ref(x,(h0,c0)), keep=True)
res["torch module free"]=host_us(lambda: ref(x,(h0,c0)))
for name,m in [("ours",ours),("torch",ref)]:
    out,(hn,cn)=m(x,(h0,c0))
    res[f"loss on {name} out keep"]=host_us(lambda: ((out-tgt)**2).sum(), keep=True)
    res[f"grad {name}"]=host_us(lambda: torch.autograd.grad(((out-tgt)**2).sum(), [x,h0,c0,*m.parameters()], retain_graph=True))
gc.disable()
res["ours module free, gc off"]=host_us(lambda: ours(x,(h0,c0)))
gc.enable()
