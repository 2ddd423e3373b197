"""Which proposals a figure counts: the dashboard's scope and named sets, and the filters
behind each of its counts, shared by the dashboard and the proposal list it links to."""
