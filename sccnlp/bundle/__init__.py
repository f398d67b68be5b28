"""Offline bundles (issue 14): the manifest of every artefact a deploy needs and its verification."""
