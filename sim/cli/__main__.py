"""``python -m sim.cli ARGS...`` is ``tanksim ARGS...``."""
import sys

from sim.cli.console import main

sys.exit(main())
