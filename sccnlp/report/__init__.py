"""Validation report: results schema (`model`), fragment merge (`collect`), terminal summary (`summary`), and the
self-contained JSON + HTML report (`render`, with SVG plots drawn by `svg`)."""
