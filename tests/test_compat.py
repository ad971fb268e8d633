"""The one compatibility path kept by the layout (issue 13): ``agents.actions`` re-exports ``sim.actions`` with a
DeprecationWarning that points at the plug-in's own import line."""
import importlib
import warnings

import pytest

import sim.actions


def test_agents_actions_reexports_sim_actions_with_a_deprecation_warning():
    old = importlib.import_module("agents.actions")
    for name in old.__all__:
        with pytest.warns(DeprecationWarning, match=f"import {name} from sim.actions") as rec:
            value = getattr(old, name)
        assert value is getattr(sim.actions, name)
        assert rec[0].filename == __file__          # stacklevel: the caller's line, not the shim's
    assert sorted(old.__all__) == sorted(n for n, v in vars(sim.actions).items()
                                         if isinstance(v, type) and issubclass(v, sim.actions.Action))


def test_from_import_warns_and_unknown_names_raise():
    with pytest.warns(DeprecationWarning):
        from agents.actions import Fire
    assert Fire is sim.actions.Fire
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(AttributeError):
            import agents.actions as old
            old.NoSuchAction  # noqa: B018
