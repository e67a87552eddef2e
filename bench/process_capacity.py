"""What one loadgen process handles per second of CPU, per driver: what ``loadgen calibrate``
measures (:mod:`loadgen.studies.calibrate`), printed without writing a calibration file.

Usage: python bench/process_capacity.py [--drivers memory,kafka,pulsar,rabbitmq] [--rounds 3]
       [--seconds 15]
"""

from __future__ import annotations

import argparse

from loadgen.studies.calibrate import measure_driver


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--drivers", default="memory,kafka,pulsar,rabbitmq")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=15)
    args = parser.parse_args()
    for kind in args.drivers.split(","):
        measure_driver(kind, args.rounds, args.seconds, lambda line: print(line, flush=True))


if __name__ == "__main__":
    main()
