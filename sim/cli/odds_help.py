"""What ``tanksim odds --help`` lists: every ``name=value`` parameter of each bundled rule set with its meaning.

The names come from the rule sets' own parameter lists (:func:`odds_parameters`: the tuples and tables their odds
parsers check names against), the meanings from :data:`MEANINGS` (paraphrased from the specs' odds sections:
panzer_squadron.md section 14, asl.md 10.1, hummel_quest.md 17).  ``tests/test_cli.py`` checks that the two agree,
so a parameter added to a rule set without a meaning here fails the tests rather than going unlisted.
The rule sets are imported only when the help is printed (:class:`OddsHelpFormatter`), not for every command.
"""
from __future__ import annotations

import argparse
import textwrap

#: Placeholder epilog of the ``odds`` subparser; :class:`OddsHelpFormatter` puts :func:`odds_parameter_help` there.
EPILOG_MARK = "<odds parameters>"

#: Rule set -> spec section of its odds parameters (under ``docs/rules/``).
SPEC_SECTIONS = {"panzer_squadron": "panzer_squadron.md section 14", "asl": "asl.md 10.1",
                 "hummel_quest": "hummel_quest.md 17"}

#: Rule set -> parameter name -> meaning (values and defaults where the spec gives them).
MEANINGS: dict[str, dict[str, str]] = {
    "panzer_squadron": {
        "penetration": "firer's penetration, integer >= 0 (required unless firer= is given)",
        "armour": "armour of the face hit, integer >= 0 (required unless target= and face= are given)",
        "firer": "firing vehicle's catalog id or name: penetration from the vehicle catalog",
        "target": "target vehicle's catalog id or name: armour from the catalog (with face=)",
        "face": "face hit for target=: front, side or rear",
        "modifier": "net modifier added as given (default 0; alone, a known net modifier)",
        "firer_status": "stationary (+1) or in_movement (-1); absent: 0",
        "turret_rotated": "true: the turret was rotated this activation (-2); default false",
        "target_moving": "true: the target is moving (-1); default false",
        "partial_cover": "true: ordinary cover or a masked side (-1); default false",
        "range_hexes": "range in hexes, integer >= 1 (+1 at 5 or less); absent: 0",
        "tile_modifier": "sum of the Tile modifiers, added (default 0)",
    },
    "asl": {
        "gun": "main armament designation, e.g. 50, 75*, 76L, 57LL (calibre and suffix pick the tables)",
        "nationality": "nationality word (e.g. german) choosing a colour-coded To Kill listing of the gun",
        "ammo": "AP, APCR, APDS, HEAT or HE (default AP)",
        "basic_tk": "basic To Kill number overriding the table lookup (integer)",
        "colour": "black or red To Hit row (default black)",
        "range_hexes": "range in hexes, integer >= 0 (0 = same hex)",
        "turret_type": "T, ST, RST, 1MT or NT (default T; Case A)",
        "ca_change": "covered-arc change in hexspines, 0-3 (default 0; Case A)",
        "firer_obstacle": "true: the firer is in an obstacle (doubles Case A, Case B +3, Case E x2); default false",
        "firer_moved": "none, afph, bounding_afph, bounding_first or motion (default none; Cases B, C)",
        "firer_los_mp": "MP the firer spent in the target's LOS (Bounding First Fire, C1/C2)",
        "gyro": "true: the gun is gyrostabilised; default false",
        "bu": "true: the firer is buttoned up (Case I); default true",
        "firer_plus1": "true: the firer is Stunned (+1); default false",
        "target_state": "stationary, stopped or moving (default stationary; Case J)",
        "target_los_mp": "MP the moving target spent in the firer's LOS (Case J1/J2)",
        "acquisition": "acquisition level on the target, 0-2 (default 0; Case N)",
        "size": "target size: very_large, large, average, small, very_small (default average; Case P)",
        "tem": "terrain effect modifier of the target's hex (default 0; Case Q)",
        "hindrance": "hindrance DRM along the line of sight, integer >= 0 (default 0; Case R)",
        "th_drm": "any other To Hit DRM (default 0)",
        "hull_down": "true: the target is hull down; default false",
        "aspect": "hull facing hit: front, side or rear (default front)",
        "turret_aspect": "turret facing hit: front, side or rear (default: as aspect)",
        "af_hull_front": "armour factor of the hull front",
        "af_hull_side": "armour factor of the hull side",
        "af_turret_front": "armour factor of the turret front (default: the hull's)",
        "af_turret_side": "armour factor of the turret side (default: the hull's)",
        "af_hull": "armour factor of both hull facings (a facing value overrides it)",
        "af_turret": "armour factor of both turret facings (a facing value overrides it)",
        "depletion": "Depletion Number of special ammunition (absent: unlimited)",
        "rof": "Rate of Fire, 0-6 (default 0)",
        "breakdown": "breakdown number B#, 2-13 (default 12)",
        "multiple_hits": "true: multiple hits apply to 15-40 mm guns (C3.8); default true",
        "cs_red": "true: the target's crew-survival number is red (brew-up); default false",
        "cs": "target's crew-survival number (absent: none)",
        "crew_morale": "target crew's morale for the crew checks (absent: none)",
        "target_plus1": "true: the target crew is marked +1 (+1 to its crew and CS dice rolls, D5.5); default false",
        "final_tk": "final To Kill number: To Kill only, skipping To Hit and the derivation",
        "given_hit": "hull, turret, hull_ch or turret_ch: To Kill only, for a hit already there (CH = critical)",
        "target_shocked": "true: the target is already Shocked or an Unconfirmed Kill (D5.6, C7.41); default false",
        "malfunction": "true: an Original roll >= B# malfunctions the main armament (D3.7); default true",
        "red_cs_burn_needs_kill": "true: the red-CS -1 decides only whether a destroyed AFV burns; default true",
        "multiple_hit_preference": ("comma list: order in which the firer prefers the results of multiple hits "
                                    "(default burn,elim,shocked,immobilized,possible_shock,no_effect,dud)"),
    },
    "hummel_quest": {
        "mode": "shot, ram or check: which calculation, and so which parameters below",
        "reality_com": "shooter's RealityCom",
        "to_hit": "shooter's To Hit score",
        "roll_mod": "other roll modifiers (e.g. -2 for the sights location)",
        "range_m": "range in metres (picks the range band)",
        "target_size": "target's Size",
        "shooter_moved_half": "true: the shooter moved at least half its hexes",
        "hard_cover": "true: the target is at least half behind hard cover (not for indirect)",
        "tn_mod": "TN modifiers from features and items",
        "firepower": "weapon's Firepower",
        "target_dur": "target's Dur before modifiers",
        "aspect": "front, side or rear face hit (not for indirect)",
        "indirect": "true: an indirect shot (section 13; the target counts as located)",
        "reinforced_turret": "true: the target has a reinforced turret (direct shots with hard_cover only)",
        "damage_dice": "weapon Damage: number of d10 rolled",
        "damage_keep": "weapon Damage: number of lowest dice kept",
        "damage_mod": "added to each shot's damage, minimum 0",
        "burst": "shots in the attack, each rolling To Hit separately",
        "target_dt": "target's current DT (0: already incapacitated)",
        "pool": "Interaction Pool: d10 rolled",
        "tn_to_be_struck": "target's TN to be Struck (capped by the ram_tn_cap option)",
        "damage_from_strike": "attacker's Damage from Strike",
        "strike_mod": "modifier of the attacker's Damage from Strike",
        "attacker_size": "attacker's Size (for the return damage; absent: no return damage)",
        "attacker_dur": "attacker's Dur (for the return damage)",
        "attacker_dt": "attacker's DT (for its chance of being incapacitated; absent: that chance is not given)",
        "target_damage_from_strike": "target's Damage from Strike (return damage)",
        "target_strike_mod": "modifier of the target's Damage from Strike",
        "ones_tens_rule": "true: natural 1s and 10s pass or fail the pool (section 6; default: the option)",
        "tn": "target number of each die of the pool",
        "successes": "successes the check needs",
    },
}


def odds_parameters() -> dict[str, dict[str, dict[str, str]]]:
    """Rule set -> group -> parameter name -> default text, from the rule sets' own parameter lists.

    panzer_squadron: its parser's name tuple (one group ``""``, defaults not kept there: ``""``); asl:
    ``PARAM_NAMES`` (one group); hummel_quest: ``mode`` plus the ``SHOT_PARAMS`` / ``RAM_PARAMS`` /
    ``CHECK_PARAMS`` tables, one group per ``mode=...``, with ``required`` or ``default X`` from the tables."""
    from sim.rules.asl import odds as asl_odds
    from sim.rules.hummel_quest import odds as hq_odds
    from sim.rules.panzer_squadron import odds as ps_odds

    def defaults(spec: hq_odds.ParamSpec) -> dict[str, str]:
        out = {}
        for name, (_kind, default) in spec.items():
            if isinstance(default, hq_odds.Required):
                out[name] = "required"
            elif default is None:
                out[name] = ""
            else:
                out[name] = f"default {str(default).lower() if isinstance(default, bool) else default}"
        return out

    return {
        "panzer_squadron": {"": dict.fromkeys(ps_odds.PARAM_NAMES, "")},
        "asl": {"": dict.fromkeys(asl_odds.PARAM_NAMES, "")},
        "hummel_quest": {"": {"mode": "default shot"}, "mode=shot": defaults(hq_odds.SHOT_PARAMS),
                         "mode=ram": defaults(hq_odds.RAM_PARAMS), "mode=check": defaults(hq_odds.CHECK_PARAMS)},
    }


def odds_parameter_help(width: int = 100) -> str:
    """The parameter section of ``tanksim odds --help``: per rule set (spec section named), per group, one line
    ``name  meaning (default)`` per parameter, the meanings of one rule set starting in one column, wrapped to
    ``width`` columns.  A name without a meaning in
    :data:`MEANINGS` is listed with ``(no description)``."""
    lines = ["parameters (name=value, any order; values and rules: docs/rules/):"]
    for ruleset, groups in odds_parameters().items():
        lines.append(f"{ruleset} ({SPEC_SECTIONS.get(ruleset, ruleset)}):")
        meanings = MEANINGS.get(ruleset, {})
        # one name column per rule set, across its groups (Hummel Quest's modes line up with each other)
        col = max(len(n) + (4 if group else 2) for group, params in groups.items() for n in params) + 2
        for group, params in groups.items():
            indent = "  "
            if group:
                lines.append(f"  {group}:")
                indent = "    "
            pad = col - len(indent)
            for name, default in params.items():
                text = meanings.get(name, "(no description)")
                if default:
                    text += f" ({default})"
                lines.extend(textwrap.wrap(text, width=width, initial_indent=f"{indent}{name:<{pad}}",
                                           subsequent_indent=" " * (len(indent) + pad)))
        if ruleset == "hummel_quest":
            lines.append("  and, in every mode, any hummel_quest.md section 16 option name as an override "
                         "(e.g. tn_clamp=...)")
    return "\n".join(lines)


class OddsHelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Help formatter of ``tanksim odds``: the epilog :data:`EPILOG_MARK` becomes :func:`odds_parameter_help`
    (so the rule sets load only when the help is printed); other text is kept as written."""

    def add_text(self, text: str | None) -> None:
        super().add_text(odds_parameter_help() if text == EPILOG_MARK else text)
