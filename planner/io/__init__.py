"""Scenarios in and out of files: the input tables (schema), reading them (load),
typing each cell against its column (parse), turning them into a typed, checked scenario
(validate, scenario) with every problem found at once (issues), and the files the
planner writes for users to fill in (template, generate, profiles)."""
