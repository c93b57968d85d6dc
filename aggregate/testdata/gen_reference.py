"""Generate reference.json: random levels and the reference load generator's
point metrics for them, computed with the reference's own formulas
(_sweep_point and pct in /work/shared/reference, CPython statistics module).

    python3 gen_reference.py > reference.json

The Go test feeds the same requests to aggregate.Level and compares every
reference field exactly. Inputs are chosen so both sides see the same floats:
E2E is drawn in ms and the reference's total_s is e2e_ms / 1000 (what Go
computes); TPOT is computed here the reference's way and handed to Go as the
engine would; the wall is whole nanoseconds, turned into seconds the way Go's
Duration.Seconds does.
"""
import json
import random
import statistics

random.seed(20261129)

# Values that sit on or near 2 dp ties, to exercise Python's round().
TIES = [0.125, 0.375, 2.675, 1.005, 10.005, 31.405, 0.5, 12.345, 99.995]


def pct(values, p):
    if not values:
        return None
    s = sorted(values)
    idx = min(len(s) - 1, round(p * (len(s) - 1)))
    return round(s[idx], 2)


def level(case_id):
    n = random.choice([1, 2, 3, 4, 5, 6, 8, 11, 20, 21, 33, 64])
    pinned = random.random() < 0.5
    in_req = random.choice([32, 128, 1024])
    out_req = random.choice([1, 2, 16, 64])
    fail_p = random.choice([0, 0, 0.1, 0.5, 1.0])
    reqs = []
    for i in range(n):
        if random.random() < fail_p:
            kind = random.choice(["http_500", "timeout", "connect"])
            reqs.append({"seq": i, "ok": False, "kind": kind, "msg": f"failure {i}"})
            continue
        if random.random() < 0.3:
            ttft = random.choice(TIES) * random.choice([1, 1, 10])
        else:
            ttft = round(random.uniform(1, 500), random.choice([3, 6]))
        e2e_ms = ttft + round(random.uniform(0, 5000), 3)
        if random.random() < 0.05:
            ttft = None  # a stream with no content chunk
        out = out_req if pinned and random.random() < 0.9 else random.randint(0, 2 * out_req + 3)
        inp = random.choice([0, in_req, in_req + random.randint(-5, 5)])
        total_s = e2e_ms / 1000
        tpot = None
        if ttft is not None and out >= 2:
            tpot = (total_s * 1000 - ttft) / (out - 1)
        reqs.append({"seq": i, "ok": True, "ttft_ms": ttft, "e2e_ms": e2e_ms,
                     "tpot_ms": tpot, "out": out, "in": inp})
    wall_ns = random.randint(1, 20_000_000_000)
    wall = wall_ns // 1_000_000_000 + (wall_ns % 1_000_000_000) / 1e9

    ok = [r for r in reqs if r["ok"]]
    failed = [r for r in reqs if not r["ok"]]
    total_out = sum(r["out"] for r in ok)
    ttfts = [r["ttft_ms"] for r in ok if r["ttft_ms"] is not None]
    tpots = [r["tpot_ms"] for r in ok if r["tpot_ms"] is not None]
    per_stream = [r["out"] / (r["e2e_ms"] / 1000) for r in ok if r["e2e_ms"] / 1000 and r["out"]]
    prefill = None
    if ttfts and ok:
        reported = [r["in"] for r in ok if r["in"]]
        mean_in = statistics.mean(reported) if reported else in_req
        mean_ttft_s = statistics.mean(ttfts) / 1000
        if mean_ttft_s > 0:
            prefill = round(mean_in / mean_ttft_s, 1)
    out_counts = [r["out"] for r in ok if r["out"]]
    stdev = round(statistics.stdev(out_counts), 2) if not pinned and len(out_counts) > 1 else None
    first = failed[0] if failed else None
    want = {
        "n_requests": n,
        "completed": len(ok),
        "failed": len(failed),
        "duration_s": round(wall, 3),
        "output_tps_total": round(total_out / wall, 2) if wall else 0.0,
        "output_tps_per_stream": round(statistics.mean(per_stream), 2) if per_stream else 0.0,
        "ttft_p50_ms": pct(ttfts, 0.50),
        "ttft_p95_ms": pct(ttfts, 0.95),
        "tpot_p50_ms": pct(tpots, 0.50),
        "prefill_tps": prefill,
        "natural_stop": not pinned,
        "output_token_stdev": stdev,
        "error": f"{first['kind']}: {first['msg']}" if first else None,
    }
    return {"id": case_id, "pinned": pinned, "input_tokens": in_req, "output_tokens": out_req,
            "wall_ns": wall_ns, "requests": reqs, "want": want}


print(json.dumps([level(i) for i in range(150)], indent=None, separators=(",", ":")))
