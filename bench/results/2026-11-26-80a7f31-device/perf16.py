import json, subprocess, sys, statistics, re, time
import os
B={'before':os.environ.get('BEFORE','/work/bin/ito-bench-before'),'after':os.environ.get('AFTER','/work/bin/ito-bench-new')}
ROUNDS=int(sys.argv[1]) if len(sys.argv)>1 else 5
def run(bin, args):
    out=subprocess.run([bin]+args, capture_output=True, text=True, timeout=300).stdout
    return out
def jl(out):
    return [json.loads(l) for l in out.splitlines() if l.startswith('{')]
benches=[]
# name, args, extractor -> dict metric->value
def spawncost(out):
    return {f"spawn-cost {r['style']} ns/task": r['ns_per_task'] for r in jl(out)}
benches.append(('spawn-cost',['spawn-cost'],spawncost))
for st in ['flat','wait','async','join']:
    def fibx(out, st=st):
        r=jl(out)[0]
        return {f"fib36 c10 {st} s": r['seconds'], f"fib36 c10 {st} cpu s": r['user_s']+r['sys_s']}
    benches.append((f'fib-{st}',['fib','--n','36','--cutoff','10','--style',st,'--workers','2','--repeat','1'],fibx))
def fibc2(out):
    r=jl(out)[0]
    return {"fib35 c2 wait s": r['seconds'], "fib35 c2 wait cpu s": r['user_s']+r['sys_s']}
benches.append(('fibc2',['fib','--n','35','--cutoff','2','--style','wait','--workers','2','--repeat','1'],fibc2))
def chainx(out):
    r=[r for r in jl(out) if r.get('experiment')=='chain'][0]
    return {"chain 1M s": r['seconds'], "chain 1M run cpu s": r.get('run_cpu_s', r['user_s']+r['sys_s']), "chain 1M process cpu s": r['user_s']+r['sys_s']}
benches.append(('chain',['chain','--n','1000000','--impl','ito','--workers','2','--repeat','1'],chainx))
def poolx(out):
    d={}
    for r in jl(out):
        d[f"pool spawn100 {r['caller']} runs/s"]=r['runs_per_s']
        d[f"pool spawn100 {r['caller']} cpu s"]=r['user_s']+r['sys_s']
    return d
benches.append(('pool',['pool','--mode','spawn','--tasks','100','--sleep-ms','0','--impl','ito','--workers','2','--runs','5000','--caller','task,main'],poolx))
def stmx(out):
    for r in jl(out):
        if r.get('experiment')=='stm-bank' and r.get('impl')=='ito':
            return {"stm-bank ito tx/s": r['tx_per_s'], "stm-bank ito cpu s": r['user_s']+r['sys_s']}
    for r in jl(out):
        if r.get('impl')=='ito':
            return {"stm-bank ito ops/s": r.get('ops_per_s') or r.get('throughput') or r.get('transfers_per_s')}
    m=re.search(r'^\s*2 ito\s+(\d+)', out, re.M)
    return {"stm-bank ito ops/s": float(m.group(1))} if m else {}
benches.append(('stm',['stm-bank','--threads','2','--ops','5000000','--impl','ito','--repeat','1'],stmx))
res={}
ONLY=sys.argv[2].split(',') if len(sys.argv)>2 else None
for name,args,ex in benches:
    if ONLY and name not in ONLY: continue
    for r in range(ROUNDS):
        for side in (['before','after'] if r%2==0 else ['after','before']):
            out=run(B[side],args)
            for k,v in ex(out).items():
                res.setdefault(k,{}).setdefault(side,[]).append(v)
    print(name,'done',file=sys.stderr,flush=True)
print(f"| figure | before (median, min-max) | after (median, min-max) | after/before |")
print("|---|---|---|---|")
for k,d in res.items():
    b=d.get('before',[]); a=d.get('after',[])
    if not b or not a: continue
    mb,ma=statistics.median(b),statistics.median(a)
    fmt=lambda x: f"{x:.4g}"
    print(f"| {k} | {fmt(mb)} ({fmt(min(b))}-{fmt(max(b))}) | {fmt(ma)} ({fmt(min(a))}-{fmt(max(a))}) | {ma/mb:.3f} |")
json.dump(res, open(sys.argv[3] if len(sys.argv)>3 else '/work/perf16.json','w'))
