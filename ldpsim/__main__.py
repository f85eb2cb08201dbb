import sys

from ldpsim.cli import main

sys.exit(main())
