"""``python -m sim.cli ARGS...`` is ``tanksim ARGS...``."""
import sys

from sim.console import main

sys.exit(main())
