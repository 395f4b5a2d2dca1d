import sys

from rloo_studio.cli import main

sys.exit(main())
