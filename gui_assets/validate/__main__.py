"""`python -m gui_assets.validate`: see the package docstring."""

from gui_assets.validate import main

raise SystemExit(main())
