"""Scenarios in and out of files: the input tables (schema), reading them (load),
turning them into a typed, checked scenario (validate, scenario), and the files the
planner writes for users to fill in (template, generate, profiles)."""
