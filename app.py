"""Start RLOO Studio: python app.py [--workspace DIR] [--demo] [--host H] [--port P] [--auth USER:PASSWORD]

Without --workspace it opens ./workspace, which starts with the bundled demo data; any other new
workspace starts empty unless --demo asks for the demo (the Label tab can load it later too)."""
import sys

from rloo_studio.core import bootstrap  # noqa: F401  (first: unsloth before transformers)

# isort: split
from rloo_studio.cli import main

if __name__ == "__main__":
    sys.exit(main(["serve", *sys.argv[1:]]))
