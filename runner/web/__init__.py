"""Seeing a run in a browser: what a page shows of a recorded run (`run_data`), its HTML (`pages`, `assets`), shared
by `runner report --html` and `runner serve`; the server itself (`app`, the web extra's one importer)."""
