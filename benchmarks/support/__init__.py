"""Helpers every benchmark shares."""
