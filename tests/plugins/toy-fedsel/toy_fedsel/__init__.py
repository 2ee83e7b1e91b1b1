"""A toy fedsel plugin (tests/plugins/toy-fedsel): a formulation and a baseline rule."""
