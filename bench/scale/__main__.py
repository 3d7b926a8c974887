"""``python -m bench.scale ...`` is ``pafka bench scale ...``."""

from __future__ import annotations

import sys

from pafka.cli.main import main

main(["bench", "scale", *sys.argv[1:]])
