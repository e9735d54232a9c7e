"""``python -m groupcoord``: the same command line as ``groupcoord``."""

from groupcoord.cli import main

if __name__ == "__main__":
    main()
