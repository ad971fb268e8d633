"""Rule set ``hummel_quest``: the battle rules of Hummel Quest (docs/rules/hummel_quest.md).

The package follows the spec's sections:

* :mod:`~sim.rules.hummel_quest.stats` -- §5 and §16: stat blocks, the vehicle catalog and the options.
* :mod:`~sim.rules.hummel_quest.odds` -- §6 to §10, §12 and §17: pool checks, shots, damage, rams, exact odds.
* :mod:`~sim.rules.hummel_quest.board` -- §2, §4, §14: terrain flags, scenario blocks, the board the rules see.
* :mod:`~sim.rules.hummel_quest.sight` -- §7.5, §7.6: lines A and B, visibility and hard cover.
* :mod:`~sim.rules.hummel_quest.panic` -- §11.2: the flee move.
* :mod:`~sim.rules.hummel_quest.ramming` -- §12.1, §12.3: ram line, legality, evasion.
* :mod:`~sim.rules.hummel_quest.play` -- §3, §4, §10 to §15: the sequence of play (:class:`HummelQuest`).
* :mod:`~sim.rules.hummel_quest.geometry` -- §18: the geometry golden cases.

``from sim.rules import hummel_quest`` is the way in; the registry of :mod:`sim.rules.base` names
``sim.rules.hummel_quest:HummelQuest``.
"""

from sim.rules.hummel_quest.board import (
    TERRAIN,
    HexFlags,
    HQBoard,
    HQHexExt,
    HQTankExt,
    StructureSpec,
    default_facing,
    flags,
    half_speed,
)
from sim.rules.hummel_quest.panic import FleePlan, flee_plan, sectors_of
from sim.rules.hummel_quest.play import HummelQuest, Options
from sim.rules.hummel_quest.ramming import evade_default, evade_options, ram_legal, ram_line
from sim.rules.hummel_quest.sight import Sight, line_pair, sight
from sim.rules.hummel_quest.stats import StatBlockError

__all__ = [
    "TERRAIN",
    "FleePlan",
    "HQBoard",
    "HQHexExt",
    "HQTankExt",
    "HexFlags",
    "HummelQuest",
    "Options",
    "Sight",
    "StatBlockError",
    "StructureSpec",
    "default_facing",
    "evade_default",
    "evade_options",
    "flags",
    "flee_plan",
    "half_speed",
    "line_pair",
    "ram_legal",
    "ram_line",
    "sectors_of",
    "sight",
]
