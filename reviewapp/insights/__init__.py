"""Insights: the dashboard (server-rendered SVG charts) and the proposal exports."""
