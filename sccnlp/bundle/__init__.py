"""Offline bundles: the manifest of every artefact a deploy needs and its verification."""
