"""Gymnasium spaces of the array layout (:mod:`agents.encoding`) and the three observation formats.

``obs_type``:

* ``"dict"`` (default): ``Dict(board, own, enemy, decision, action_mask)`` -- the arrays as they are, float32 with
  the mask int8 (PettingZoo Classic's ``obs["action_mask"]``), flat enough for Stable-Baselines3's
  ``MultiInputPolicy``;
* ``"classic"``: ``Dict(observation, action_mask)`` as PettingZoo Classic environments lay it out, with every array
  but the mask flattened into ``observation`` (order board, own, enemy, decision);
* ``"flat"``: that flat vector alone (a ``Box``); the mask is then in ``info["action_mask"]`` and
  ``action_masks()`` only.

Bounds: 0 below; above, 1 for every feature and the tank count of the battle for the per-hex count planes.
"""
from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces

from agents.encoding import ActionTable, Encoded, Layout

OBS_TYPES = ("dict", "classic", "flat")
_PARTS = ("board", "own", "enemy", "decision")


def check_obs_type(obs_type: str) -> str:
    """``obs_type`` if it is one of :data:`OBS_TYPES`; raises ``ValueError`` naming them otherwise."""
    if obs_type not in OBS_TYPES:
        raise ValueError(f"obs_type {obs_type!r}: expected one of {', '.join(OBS_TYPES)}")
    return obs_type


def _box(shape: tuple[int, ...], high: float, dtype: Any = np.float32) -> spaces.Box:
    return spaces.Box(low=np.zeros(shape, dtype=dtype), high=np.full(shape, high, dtype=dtype), dtype=dtype)


def flat_high(layout: Layout) -> np.ndarray:
    """The upper bounds of the flat vector (float32)."""
    shapes, highs = layout.shapes(), layout.highs()
    return np.concatenate([np.full(int(np.prod(shapes[k])), highs[k], dtype=np.float32) for k in _PARTS])


def observation_space(layout: Layout, obs_type: str = "dict") -> spaces.Space:
    """The observation space of ``layout`` in format ``obs_type`` (module docstring)."""
    shapes, highs = layout.shapes(), layout.highs()
    mask = _box(shapes["action_mask"], 1, np.int8)
    if obs_type == "dict":
        return spaces.Dict({**{k: _box(shapes[k], highs[k]) for k in _PARTS}, "action_mask": mask})
    high = flat_high(layout)
    flat = spaces.Box(low=np.zeros_like(high), high=high, dtype=np.float32)
    if obs_type == "classic":
        return spaces.Dict({"observation": flat, "action_mask": mask})
    check_obs_type(obs_type)
    return flat


def action_space(layout: Layout) -> spaces.Discrete:
    """``Discrete(A)``: the indices of the action table."""
    return spaces.Discrete(ActionTable(layout).size)


def to_obs(enc: Encoded, obs_type: str) -> Any:
    """``enc`` in format ``obs_type`` (new arrays every call: a caller may keep or change them)."""
    if obs_type == "dict":
        return {k: v.copy() for k, v in enc.arrays.items()}
    flat = enc.flat()
    if obs_type == "classic":
        return {"observation": flat, "action_mask": enc.mask.copy()}
    return flat
