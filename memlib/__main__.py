import sys

try:
    from memlib.cli import main
except KeyboardInterrupt:  # Ctrl-C while the command line loads: one line, as later
    print("memlib: interrupted", file=sys.stderr)
    sys.exit(130)

sys.exit(main())
