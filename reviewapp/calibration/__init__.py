"""How far each lens agrees with the humans who adjudicated what it judged, and its drift."""
