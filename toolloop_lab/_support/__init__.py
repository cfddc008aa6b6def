"""Internal helpers every layer uses (escaping, clipping, JSON safety, JSONL, fields, lazy names,
sync runs). Not public: import what you need from the package root or a public module."""
