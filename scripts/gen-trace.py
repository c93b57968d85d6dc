#!/usr/bin/env python3
"""Writes plans/traces/chat.jsonl: a small synthetic trace in Mooncake's format
(timestamp in ms, input_length, output_length, hash_ids of 512-token blocks)
that looks like production chat traffic, for plans/replay.yaml.

  python3 scripts/gen-trace.py > plans/traces/chat.jsonl

What it models, seeded so the file is the same on every run:
  - four applications, each with its own system prompt (1 to 6 blocks) that
    every one of its requests starts with;
  - sessions: a third of an application's requests are a later turn of an
    earlier conversation, whose prompt is the earlier prompt's whole blocks
    plus new ones (a prompt's last, partial block is its own: the next turn
    fills it with different text);
  - one request in ten shares nothing (an application without a system prompt);
  - Poisson arrivals at about 12 requests/s, with three bursts of 25 requests
    within half a second each (a retry storm, a batch job, a page reload);
  - output lengths from 16 to 256 tokens, most of them short.
"""
import json
import random

BLOCK = 512
rng = random.Random(19)
next_id = 0


def new_ids(n):
    global next_id
    ids = list(range(next_id, next_id + n))
    next_id += n
    return ids


apps = [new_ids(n) for n in (2, 4, 1, 6)]  # system prompts, in blocks
weights = [0.35, 0.25, 0.2, 0.1]  # the rest: one-off prompts sharing nothing
sessions = [[] for _ in apps]  # per app: the whole blocks of earlier prompts

# Arrival times: Poisson at 12/s over 20 s, plus three bursts.
times = []
t = 0.0
while t < 20.0:
    t += rng.expovariate(12.0)
    times.append(t)
for start in (4.0, 9.5, 15.0):
    times += [start + rng.uniform(0, 0.5) for _ in range(25)]
times.sort()

for t in times:
    u = rng.random()
    app = next((i for i, w in enumerate(weights) if (u := u - w) < 0), None)
    if app is None:
        prefix = []
    elif sessions[app] and rng.random() < 1 / 3:
        prefix = rng.choice(sessions[app])
    else:
        prefix = apps[app]
    fresh = rng.randint(1, 3)  # the user's new text, in blocks (the last partial)
    full = prefix + new_ids(fresh - 1)
    ids = full + new_ids(1)
    input_length = len(full) * BLOCK + rng.randint(64, BLOCK)
    if app is not None and len(full) < 16:
        sessions[app].append(full)
    output = min(256, max(16, int(rng.lognormvariate(4.0, 0.7))))
    print(json.dumps({"timestamp": round(t * 1000), "input_length": input_length,
                      "output_length": output, "hash_ids": ids}))
