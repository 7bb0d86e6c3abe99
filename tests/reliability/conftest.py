"""tests/reliability: differential, bad-input and cache tests. Helpers (chain_generator,
diff_harness) are plain modules of this folder."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
