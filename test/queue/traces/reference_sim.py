#!/usr/bin/env python3
# An independent, count-based reference simulator for the SWF replay (not used by the build or
# the tests): FCFS, textbook EASY (shadow time + extra processors) and conservative re-planned
# from scratch, on processor counts only. Used to cross-check `oq simulate` on backfill32.swf
# (docs/simulate.md): the averages agree exactly.
#   python3 test/queue/traces/reference_sim.py test/queue/traces/backfill32.swf [--starts]
import sys
def parse(path):
    jobs=[];P=None
    for line in open(path):
        s=line.strip()
        if not s: continue
        if s.startswith(';'):
            if 'MaxProcs:' in s: P=int(s.split(':')[1])
            continue
        f=s.split(); assert len(f)==18,(line)
        jobs.append(dict(id=int(f[0]),sub=int(f[1]),run=int(f[3]),p=int(f[7]) if int(f[7])>0 else int(f[4]),req=int(f[8])))
    return P,jobs
def earliest(profile_ends, now, P, need, dur, resv):
    # profile: list of (start,end,procs) busy intervals
    cands=sorted(set([now]+[e for (s,e,p) in profile_ends if e>now]))
    for t in cands:
        ok=True
        pts=sorted(set([t]+[s for (s,e,p) in profile_ends if t<s<t+dur]))
        for x in pts:
            used=sum(p for (s,e,p) in profile_ends if s<=x<e)
            if used+need>P: ok=False;break
        if ok: return t
    raise Exception
def sim(P,jobs,policy):
    jobs=sorted(jobs,key=lambda j:(j['sub'],j['id']))
    t=0;i=0;queue=[];running=[];start={};end={}
    import heapq
    while i<len(jobs) or queue or running:
        nxt=[]
        if i<len(jobs): nxt.append(jobs[i]['sub'])
        if running: nxt.append(min(r[0] for r in running))
        t=min(nxt)
        running=[r for r in running if r[0]>t]
        while i<len(jobs) and jobs[i]['sub']<=t: queue.append(jobs[i]); i+=1
        free=P-sum(r[1] for r in running)
        if policy=='fcfs':
            while queue and queue[0]['p']<=free:
                j=queue.pop(0);free-=j['p'];start[j['id']]=t;e=t+min(j['run'],j['req']);running.append((e,j['p'],t+j['req']))
        elif policy=='easy':
            while queue and queue[0]['p']<=free:
                j=queue.pop(0);free-=j['p'];start[j['id']]=t;e=t+min(j['run'],j['req']);running.append((e,j['p'],t+j['req']))
            if queue:
                head=queue[0]; avail=free; shadow=None
                for (e,p,est) in sorted(running,key=lambda r:r[2]):
                    avail+=p
                    if avail>=head['p']: shadow=est; extra=avail-head['p']; break
                for j in list(queue[1:]):
                    if j['p']<=free and (t+j['req']<=shadow or j['p']<=extra):
                        if not t+j['req']<=shadow: extra-=j['p']
                        queue.remove(j);free-=j['p'];start[j['id']]=t;e=t+min(j['run'],j['req']);running.append((e,j['p'],t+j['req']))
        else:
            prof=[(t,est,p) for (e,p,est) in running]
            for j in list(queue):
                s=earliest(prof,t,P,j['p'],j['req'],None)
                prof.append((s,s+j['req'],j['p']))
                if s==t:
                    queue.remove(j);start[j['id']]=t;e=t+min(j['run'],j['req']);running.append((e,j['p'],t+j['req']))
        for j in jobs:
            pass
    res={}
    for j in jobs:
        w=start[j['id']]-j['sub'];r=min(j['run'],j['req'])
        res[j['id']]=(start[j['id']],w,max(1,(w+r)/max(r,10)))
    mk=max(start[j['id']]+min(j['run'],j['req']) for j in jobs)-min(j['sub'] for j in jobs)
    util=sum(j['p']*min(j['run'],j['req']) for j in jobs)/(P*mk)
    return res,util,mk
P,jobs=parse(sys.argv[1])
for pol in ['fcfs','easy','conservative']:
    res,util,mk=sim(P,jobs,pol)
    n=len(res)
    print(pol,'avgwait %.1f avgbsld %.2f util %.4f makespan %d'%(sum(r[1] for r in res.values())/n,sum(r[2] for r in res.values())/n,util,mk))
    if len(sys.argv)>2: print(' '.join('%d:%d'%(k,v[0]) for k,v in sorted(res.items())))
