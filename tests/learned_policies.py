"""Deterministic callables for the ``learned`` doctrine in tests (importable by isolated children: ``tests/`` is on
their ``PYTHONPATH``), and a protocol script answering with action indices."""
from __future__ import annotations

import numpy as np


def last_legal(observation, mask):
    """The highest legal index (deterministic: it needs no random stream)."""
    return int(np.flatnonzero(mask)[-1])


def not_an_index(observation, mask):
    return "fire!"


#: An entrant in its own process that asks for the arrays and answers ``{"type": "action", "index": k}``.
INDEX_BOT = '''
import json, sys
import numpy as np
for line in sys.stdin:
    m = json.loads(line)
    if m["type"] == "hello":
        print(json.dumps({"type": "ready", "name": "index-bot", "arrays": True}), flush=True)
    elif m["type"] == "decide":
        mask = m["obs"]["arrays"]["arrays"]["action_mask"]
        k = max(i for i, v in enumerate(mask) if v)
        print(json.dumps({"type": "action", "index": k}), flush=True)
    elif m["type"] == "bye":
        break
'''
