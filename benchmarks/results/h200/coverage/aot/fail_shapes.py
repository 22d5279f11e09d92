import json, sys, torch, concurrent.futures as cf
sys.path.insert(0,'src')
from rnnbench.ops import aot
from rnnbench.ops.plans import choose_plan, backward_precision
G={'lstm':4,'gru':3,'rnn_tanh':1}
D={'fp32':(torch.float32,'tf32x3'),'tf32':(torch.float32,'tf32'),'bf16':(torch.bfloat16,'ieee'),'fp16':(torch.float16,'ieee')}
def one(args):
    cell,dt,b,h,d=args
    dtype,prec=D[dt]
    try:
        p=choose_plan(b,h,G[cell],dtype,torch.device('cuda'),multiprocessors=132,precision=prec,direction=d, bounded=True)
    except Exception as e:
        return (cell,dt,b,h,d,'refused',str(e)[:60])
    prod=backward_precision(prec,G[cell]) if d=='backward' else prec
    try:
        c=aot.compile_kernel(cell.split('_')[0],d,dtype,h,p,prod)
        return (cell,dt,b,h,d,c.metadata.shared, f"bb{p.block_b} bh{p.block_h} bk{p.block_k} st{p.num_stages} ho{int(p.half_operands)} sf{int(p.split_fp16)} gs{p.gate_split} sk{int(p.split_k)} res{int(p.w_resident)}")
    except Exception as e:
        return (cell,dt,b,h,d,'compile-fail',str(e)[:100])
cases=[tuple(c) for c in json.load(open(sys.argv[1]))]
jobs=[(*c,d) for c in cases for d in ('forward','backward')]
with cf.ProcessPoolExecutor(2) as ex:
    for r in ex.map(one,jobs):
        flag = 'OVER' if isinstance(r[5],int) and r[5]>232448 else ''
        print(*r, flag, flag and '', flush=True)
