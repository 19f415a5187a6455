#!/usr/bin/env python3
"""Writes the seed corpus of fuzz_manifest (fuzz/corpus/manifest/): valid manifests of the two
shards that manifest_fuzzer.cc writes at start-up, each with their SHA-256s. Run from the
repository's root after changing the shard layout (src/checkpoint/format.h) or the harness's
shards; with a folder as argument it writes the two shards there instead, to try a seed with
`zerodp eval --checkpoint FOLDER`."""
import hashlib, json, struct, sys

K=142
def shard(s):
    h=b"ZERODPSH"+struct.pack("<III",1,s,2)+b"\0"*4+struct.pack("<Q",K)
    h=h+b"\0"*(64-len(h))
    body=b"".join(struct.pack("<f", s*10000+b*1000+j) for b in range(3) for j in range(K))
    return h+body
if len(sys.argv)>1:
    for s in range(2): open(sys.argv[1]+"/rank-%05d-of-00002.bin"%s,"wb").write(shard(s))
    sys.exit()
sha=[hashlib.sha256(shard(s)).hexdigest() for s in range(2)]
gpt={"type":"gpt","n_layer":1,"n_head":1,"n_embd":1,"n_positions":1,"vocab_size":256,
     "checkpoint_activations":False,"data":"","data_seed":0,"params":284}
def manifest(model, ranges, shas=sha, **over):
    m={"format":"zerodp-checkpoint","version":1,"run_id":"0123456789abcdef0123456789abcdef","model":model,"params":284,"stage":3,"ranks":2,
       "precision":"bf16","bucket_bytes":1048576,
       "state":{"step":10,"samples_done":640,"loss_scale":1.0,"good_steps":10},
       "run":{"lr":0.002,"warmup":20,"steps":100,"seed":0},
       "shards":[{"file":"rank-%05d-of-00002.bin"%s,"bytes":64+12*K,"elements":K,"sha256":shas[s],"ranges":ranges[s]} for s in range(2)]}
    m.update(over)
    return json.dumps(m, indent=2)+"\n"
seeds={
 "seed_gpt_contiguous": manifest(gpt, [[[0,142]],[[142,142]]]),
 "seed_gpt_interleaved": manifest(gpt, [[[0,100],[200,42]],[[100,100],[242,42]]]),
 "seed_mlp": manifest({"type":"mlp","width":12,"depth":1,"data_seed":0,"params":284}, [[[0,142]],[[142,142]]], stage=0),
 "seed_fp16_state": manifest(gpt, [[[142,142]],[[0,142]]], precision="fp16",
     state={"step":3,"samples_done":96,"loss_scale":32768.0,"good_steps":2}),
 "seed_bad_sha": manifest(gpt, [[[0,142]],[[142,142]]], shas=[sha[1],sha[0]]),
}
# One manifest as written before run ids, which must still load.
legacy=json.loads(seeds["seed_gpt_contiguous"]); del legacy["run_id"]
seeds["seed_no_run_id"]=json.dumps(legacy, indent=2)+"\n"
for name,text in seeds.items():
    open("fuzz/corpus/manifest/"+name,"w").write(text)
print(sha)
