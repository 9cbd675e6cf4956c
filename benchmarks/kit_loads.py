"""How long each notebook takes to load from a class kit on a student's clone, measured:
the kit is unpacked into a fresh copy of this checkout's tracked files and every notebook is
run there with `python -m memlib notebook`, timed whole. Prints each notebook's seconds and how
many results it had to compute (0 when the kit held them all), and publishes them as
figures/kit_loads.json (figures/<scale>/ at other scales), which the teachers' page reads.

    make figures && make class-kit
    python benchmarks/kit_loads.py build/class-kit.tar.gz [--scale small] [--notebooks 01,03]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from memlib import DEFAULT_SCALE, SCALES, STUDIES, kit
from memlib.prose import duration


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kit", type=Path)
    parser.add_argument("--scale", default=DEFAULT_SCALE, choices=SCALES)
    parser.add_argument("--notebooks", help="their numbers, e.g. 01,03,05 (default: all)")
    args = parser.parse_args()
    stems = [s for s in STUDIES.values() if not args.notebooks
             or s[:2] in args.notebooks.split(",")]
    try:
        measured = kit.measure_loads(args.kit, args.scale, stems)
    except kit.KitError as err:
        print(f"memlib: {err}", file=sys.stderr)
        return 1
    for stem in stems:
        print(f"{stem}: loads in {duration(measured['load_seconds'][stem])}, "
              f"{measured['computed'][stem]} results computed")
    print(f"published {kit.loads_file(args.scale)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
