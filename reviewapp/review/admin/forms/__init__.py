"""Forms and widgets for the configuration admin, one module per model."""
