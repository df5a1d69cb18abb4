"""``python -m glassformer``: the glassformer command line."""

from .cli import main

raise SystemExit(main())
