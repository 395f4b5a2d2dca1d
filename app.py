"""Start RLOO Studio: python app.py [--workspace DIR] [--host H] [--port P] [--auth USER:PASSWORD]"""
import sys

from rloo_studio import bootstrap  # noqa: F401  (first: unsloth before transformers)
from rloo_studio.cli import main

if __name__ == "__main__":
    sys.exit(main(["serve", *sys.argv[1:]]))
