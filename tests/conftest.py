import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

# The work clock at the fitted machine's pace (planner.solve.pace): the tests' plans and
# rounds are the same on every machine, and no run measures or keeps a pace
os.environ["PLANNER_PACE"] = "1"
