"""One module per API family; each registers its scenarios on import."""
