import sys

from antsim.cli import main

sys.exit(main())
