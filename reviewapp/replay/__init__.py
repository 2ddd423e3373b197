"""Trying a lens or panel change on proposals humans already decided, before it ships."""
