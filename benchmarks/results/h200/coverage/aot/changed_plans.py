import re, sys, torch, dataclasses, concurrent.futures as cf
sys.path.insert(0,'/work/main/src')
from rnnbench.ops import aot
from rnnbench.ops.plans import Plan, backward_precision
lines=open(sys.argv[1]).read().splitlines()
old={};new={}
for l in lines:
    if l.startswith('< '): k,v=l[2:].split(' -> ',1); old[k]=v
    if l.startswith('> '): k,v=l[2:].split(' -> ',1); new[k]=v
def plan_of(v):
    return eval(v, {'Plan':Plan})
CELL={1:'rnn',3:'gru',4:'lstm'}
jobs={}
for k in new:
    if k.startswith("{"): continue
    b,h,g,dt,prec,d,bounded,dev,sm=k.split()
    if sm!='132' or not old[k].startswith('Plan'): continue
    dtype=getattr(torch,dt.split('.')[1])
    for which,v in (('old',old[k]),('new',new[k])):
        if not v.startswith('Plan'): continue
        p=plan_of(v)
        key=(CELL[int(g)],d,dt,int(h),prec,repr(p))
        jobs.setdefault(key,[]).append((which,k))
def one(key):
    cell,d,dt,h,prec,pr=key
    p=plan_of(pr); dtype=getattr(torch,dt.split('.')[1])
    prod=backward_precision(prec,{'rnn':1,'gru':3,'lstm':4}[cell]) if d=='backward' else prec
    try: return key, aot.compile_kernel(cell,d,dtype,h,p,prod).metadata.shared
    except Exception as e: return key, f'ERR {type(e).__name__}: {str(e)[:80]}'
print(len(jobs),'compiles',flush=True)
with cf.ProcessPoolExecutor(2) as ex:
    for key,sh in ex.map(one,list(jobs)):
        whiches={w for w,_ in jobs[key]}
        print(sorted(whiches), key[0],key[1],key[2],key[3],key[4], sh, 'OVER' if isinstance(sh,int) and sh>232448 else 'fits' if isinstance(sh,int) else '', re.sub(r'(\w+)=(False|0|\'\')(, )?','',key[5])[:160], flush=True)
