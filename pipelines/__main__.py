import sys

from interfaces.cli import main

sys.exit(main())
